#include "monitor/gui/curves_legend.h"

#include <QPainter>
#include <QPixmap>
#include <algorithm>

namespace memtap::gui {

namespace {

constexpr int kSpacing = 6;  // between two entries of a row

// A short stretch of the line as it is drawn: its colour, its width (at most 2 px, so that
// a thick line does not become a box) and its dashes.
QIcon line_icon(QPen pen, bool hidden) {
  QPixmap pixmap(24, 12);
  pixmap.fill(Qt::transparent);
  QPainter painter(&pixmap);
  pen.setWidthF(std::clamp(pen.widthF(), 1.0, 2.0));
  QColor color = pen.color();
  if (hidden) color.setAlphaF(0.3);
  pen.setColor(color);
  pen.setCapStyle(Qt::FlatCap);
  painter.setPen(pen);
  painter.drawLine(QPointF(1, 6), QPointF(23, 6));
  return QIcon(pixmap);
}

}  // namespace

CurvesLegend::CurvesLegend(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

void CurvesLegend::setEntries(const std::vector<LegendEntry>& entries) {
  bool same_names = entries.size() == entries_.size();
  for (size_t i = 0; same_names && i < entries.size(); ++i) {
    same_names = entries[i].name == entries_[i].name;
  }
  if (!same_names) {
    for (QToolButton* b : buttons_) delete b;
    buttons_.clear();
    for (const LegendEntry& e : entries) {
      auto* button = new QToolButton(this);
      button->setAutoRaise(true);
      button->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
      button->setIconSize(QSize(24, 12));
      button->setText(e.name);
      connect(button, &QToolButton::clicked, this, [this, name = e.name] { emit toggled(name); });
      button->show();
      buttons_.push_back(button);
    }
  }
  entries_ = entries;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const LegendEntry& e = entries_[i];
    QToolButton* button = buttons_[i];
    button->setIcon(line_icon(e.pen, e.hidden));
    QPalette palette = this->palette();
    if (e.hidden) {
      palette.setColor(QPalette::ButtonText, palette.color(QPalette::Disabled, QPalette::Text));
    }
    button->setPalette(palette);
    button->setToolTip(e.hidden ? tr("%1 is hidden: click to draw it").arg(e.name)
                                : tr("Click to hide %1").arg(e.name));
  }
  updateGeometry();
  arrange(width(), true);
}

QStringList CurvesLegend::names() const {
  QStringList names;
  for (const LegendEntry& e : entries_) names << e.name;
  return names;
}

QToolButton* CurvesLegend::entry(const QString& name) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].name == name) return buttons_[i];
  }
  return nullptr;
}

int CurvesLegend::rowHeight() const {
  int height = 0;
  for (const QToolButton* b : buttons_) height = std::max(height, b->sizeHint().height());
  return height;
}

int CurvesLegend::arrange(int width, bool place) const {
  if (buttons_.empty()) return 0;
  const int row_height = rowHeight();
  // Rows first, then each one centred in the width.
  std::vector<std::pair<size_t, size_t>> rows;  // [first, end) of buttons_
  std::vector<int> row_widths;
  size_t first = 0;
  int used = 0;
  for (size_t i = 0; i < buttons_.size(); ++i) {
    const int w = buttons_[i]->sizeHint().width();
    if (i > first && used + kSpacing + w > width) {
      rows.emplace_back(first, i);
      row_widths.push_back(used);
      first = i;
      used = 0;
    }
    used += (i > first ? kSpacing : 0) + w;
  }
  rows.emplace_back(first, buttons_.size());
  row_widths.push_back(used);
  if (place) {
    for (size_t r = 0; r < rows.size(); ++r) {
      int x = std::max(0, (width - row_widths[r]) / 2);
      for (size_t i = rows[r].first; i < rows[r].second; ++i) {
        const QSize hint = buttons_[i]->sizeHint();
        buttons_[i]->setGeometry(x, int(r) * row_height, hint.width(), row_height);
        x += hint.width() + kSpacing;
      }
    }
  }
  return int(rows.size()) * row_height;
}

int CurvesLegend::heightForWidth(int width) const {
  return arrange(width, false);
}

QSize CurvesLegend::sizeHint() const {
  int width = 0;
  for (const QToolButton* b : buttons_) width += b->sizeHint().width() + kSpacing;
  return QSize(std::max(width - kSpacing, 0), arrange(QWIDGETSIZE_MAX, false));
}

// One row high: the layouts above ask heightForWidth() for the rows a width needs, and a
// minimum of every entry in a row of its own would take that much from the chart for good.
QSize CurvesLegend::minimumSizeHint() const {
  int widest = 0;
  for (const QToolButton* b : buttons_) widest = std::max(widest, b->sizeHint().width());
  return QSize(widest, rowHeight());
}

void CurvesLegend::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  arrange(width(), true);
}

}  // namespace memtap::gui
