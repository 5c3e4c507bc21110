// See elided_label.h.
#include "monitor/gui/elided_label.h"

#include <QFontMetrics>

namespace memtap::gui {

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent) {
  setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  setTextFormat(Qt::PlainText);
}

void ElidedLabel::setFullText(const QString& text) {
  full_ = text;
  setToolTip(text);
  elide();
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
  QLabel::resizeEvent(event);
  elide();
}

void ElidedLabel::elide() {
  const int room = contentsRect().width();
  const QFontMetrics metrics = fontMetrics();
  if (metrics.horizontalAdvance(full_) <= room) {
    setText(full_);
    return;
  }
  // At a word's end: "… one box while…", not "… one box while consec…".
  const QString ellipsis(QChar(0x2026));
  QString cut = metrics.elidedText(full_, Qt::ElideRight, room);
  cut.chop(1);  // its "…"
  const qsizetype space = cut.lastIndexOf(QLatin1Char(' '));
  if (space > 0 && cut.size() < full_.size() && !full_.at(cut.size()).isSpace()) {
    cut.truncate(space);
  }
  while (cut.endsWith(QLatin1Char(' ')) || cut.endsWith(QLatin1Char(';')) ||
         cut.endsWith(QLatin1Char(',')) || cut.endsWith(QLatin1Char('('))) {
    cut.chop(1);
  }
  setText(cut + ellipsis);
}

}  // namespace memtap::gui
