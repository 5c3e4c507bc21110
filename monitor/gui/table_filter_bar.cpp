// See table_filter_bar.h.
#include "monitor/gui/table_filter_bar.h"

#include <QRegularExpression>
#include <algorithm>
#include <cmath>

namespace memtap::gui {

std::optional<uint64_t> parse_bytes(const QString& text, bool* empty) {
  const QString t = text.trimmed();
  if (empty != nullptr) *empty = t.isEmpty();
  if (t.isEmpty()) return std::nullopt;
  static const QRegularExpression re(
      QStringLiteral("^([0-9]+(?:\\.[0-9]*)?)\\s*([kmgt]?)(?:i?b)?$"),
      QRegularExpression::CaseInsensitiveOption);
  const QRegularExpressionMatch m = re.match(t);
  if (!m.hasMatch()) return std::nullopt;
  const double number = m.captured(1).toDouble();
  const QString unit = m.captured(2).toLower();
  const int power = unit.isEmpty() ? 0 : int(QStringLiteral("kmgt").indexOf(unit)) + 1;
  const double bytes = number * std::pow(1024.0, power);
  if (bytes >= 1.8e19) return std::nullopt;
  return uint64_t(std::llround(bytes));
}

TableFilterBar::TableFilterBar(const QString& text_hint, QWidget* parent) : QWidget(parent) {
  rows_ = new QBoxLayout(QBoxLayout::LeftToRight, this);
  rows_->setContentsMargins(0, 0, 0, 0);
  row_ = new QHBoxLayout;
  tail_ = new QHBoxLayout;
  text_ = new QLineEdit(this);
  text_->setPlaceholderText(text_hint);
  text_->setClearButtonEnabled(true);
  // The hint whole ("Filter: owner, Name or stack"): it says what the field matches.
  text_->setMinimumWidth(text_->fontMetrics().horizontalAdvance(text_hint) + 40);
  min_ = new QLineEdit(this);
  min_->setPlaceholderText(tr("min size"));
  min_->setToolTip(tr("Smallest size shown: 4096, 64 KiB, 1.5 MiB, 2G"));
  max_ = new QLineEdit(this);
  max_->setPlaceholderText(tr("max size"));
  max_->setToolTip(tr("Largest size shown: 4096, 64 KiB, 1.5 MiB, 2G"));
  for (QLineEdit* size : {min_, max_}) {
    // Room for "min size" and "1.5 MiB", never squeezed to "...".
    size->setMinimumWidth(size->fontMetrics().horizontalAdvance(tr("max size")) + 24);
    size->setMaximumWidth(110);
  }
  only_range_ = new QCheckBox(tr("Only the selected range"), this);
  only_range_->setChecked(true);
  only_range_->setToolTip(tr("Only what falls in the range selected in the overview"));
  status_ = new QLabel(this);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  row_->addWidget(text_, 2);
  row_->addWidget(new QLabel(tr("Size"), this));
  row_->addWidget(min_);
  row_->addWidget(new QLabel(QStringLiteral("–"), this));
  row_->addWidget(max_);
  tail_->addWidget(only_range_);
  tail_->addSpacing(12);
  tail_->addWidget(status_, 1);
  rows_->addLayout(row_, 3);
  rows_->addLayout(tail_, 2);

  typing_.setSingleShot(true);
  typing_.setInterval(300);
  connect(&typing_, &QTimer::timeout, this, &TableFilterBar::changed);
  connect(text_, &QLineEdit::textEdited, this, [this] { typing_.start(); });
  connect(text_, &QLineEdit::returnPressed, this, [this] {
    typing_.stop();
    emit changed();
  });
  for (QLineEdit* size : {min_, max_}) {
    connect(size, &QLineEdit::editingFinished, this, &TableFilterBar::changed);
    connect(size, &QLineEdit::textChanged, this, [size] {
      bool empty = false;
      const bool ok = parse_bytes(size->text(), &empty).has_value() || empty;
      size->setStyleSheet(ok ? QString() : QStringLiteral("color: #c0392b"));
    });
  }
  connect(only_range_, &QCheckBox::toggled, this, &TableFilterBar::changed);
}

void TableFilterBar::setText(const QString& text) {
  if (text_->text() == text) return;
  typing_.stop();
  text_->setText(text);
  emit changed();
}

QSize TableFilterBar::minimumSizeHint() const {
  // The narrower arrangement's: the bar takes two rows rather than widen the window.
  const int width = std::max(row_->minimumSize().width(), tail_->minimumSize().width());
  return {width, rows_->minimumSize().height()};
}

bool TableFilterBar::twoRows() const {
  return rows_->direction() == QBoxLayout::TopToBottom;
}

void TableFilterBar::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  arrange();
}

bool TableFilterBar::event(QEvent* event) {
  // A longer status line (the table's count) asks for a new layout: it may no longer fit
  // beside the fields.
  if (event->type() == QEvent::LayoutRequest) arrange();
  return QWidget::event(event);
}

void TableFilterBar::arrange() {
  // One row where both halves have the room they ask for; back to one only with room to
  // spare, so that the status line's digits, coming and going, do not make the bar jump.
  const int slack =
      twoRows() ? status_->fontMetrics().horizontalAdvance(QStringLiteral("0000000")) : 0;
  const int one_row = row_->sizeHint().width() + rows_->spacing() + tail_->sizeHint().width();
  const bool two = one_row + slack > width();
  if (two == twoRows()) return;
  rows_->setDirection(two ? QBoxLayout::TopToBottom : QBoxLayout::LeftToRight);
  updateGeometry();  // its height
}

uint64_t TableFilterBar::minSize() const {
  return parse_bytes(min_->text()).value_or(0);
}

uint64_t TableFilterBar::maxSize() const {
  return parse_bytes(max_->text()).value_or(UINT64_MAX);
}

}  // namespace memtap::gui
