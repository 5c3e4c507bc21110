// See range_bars_overlay.h.
#include "monitor/gui/range_bars_overlay.h"

#include <QBrush>
#include <QFont>
#include <QFontMetricsF>
#include <QPen>
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "monitor/gui/count_text.h"

namespace memtap::gui {

namespace {

// Over the plot area's background and grid (Qt Charts: 0-3), under the series (4) and the
// step lines (6).
constexpr qreal kBarZ = 3.5;
constexpr qreal kLabelZ = 3.6;
constexpr qreal kNoteZ = 5;      // what is not drawn: over the series (4), under the steps (6)
constexpr double kMinBarPx = 2;  // a range narrower than this is still seen

// Soft colours, none of them the curves' own nor the grey of a bar of several ranges.
const QColor kPalette[] = {QColor(0x8d, 0xa0, 0xcb), QColor(0xa6, 0xd8, 0x54),
                           QColor(0xe7, 0x8a, 0xc3), QColor(0xff, 0xd9, 0x2f),
                           QColor(0x66, 0xc2, 0xa5), QColor(0xe5, 0xc4, 0x94),
                           QColor(0xfc, 0x8d, 0x62), QColor(0xbe, 0xba, 0xda)};
const QColor kSeveralColor(0xc8, 0xc8, 0xc8);

// The same name has the same colour in every redraw and every window.
QColor colour_of(const std::string& name) {
  uint32_t h = 2166136261u;  // FNV-1a: std::hash may differ between builds
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return kPalette[h % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

template <class Item>
Item* item(QChart* chart, std::vector<Item*>& pool, size_t index) {
  while (pool.size() <= index) {
    auto* made = new Item(chart);
    made->hide();
    pool.push_back(made);
  }
  return pool[index];
}

}  // namespace

RangeBarsOverlay::RangeBarsOverlay(QChart* chart)
    : chart_(chart),
      hidden_(new QGraphicsSimpleTextItem(chart)),
      hidden_back_(new QGraphicsRectItem(chart)) {
  hidden_->hide();
  hidden_back_->hide();
}

QString RangeBarsOverlay::hiddenText(const viewdata::RangeBarsData& data) {
  QStringList parts;
  if (data.deeper_lanes > 0) {
    parts << QStringLiteral("+%1 not drawn")
                 .arg(count_text(data.deeper_lanes, "nested lane", "nested lanes"));
  }
  if (data.too_deep > 0) {
    parts << QStringLiteral("+%1 nested past %2 levels not kept")
                 .arg(count_text(data.too_deep, "range", "ranges"),
                      QString::number(RangeLanes::kMaxLanes));
  }
  return parts.join(QStringLiteral("; "));
}

QString RangeBarsOverlay::shortHiddenText(const viewdata::RangeBarsData& data) {
  QStringList parts;
  if (data.deeper_lanes > 0) parts << '+' + count_text(data.deeper_lanes, "lane", "lanes");
  if (data.too_deep > 0) parts << '+' + count_text(data.too_deep, "range", "ranges");
  return parts.isEmpty() ? QString()
                         : parts.join(QStringLiteral(", ")) + QStringLiteral(" not drawn");
}

QString RangeBarsOverlay::barText(const viewdata::RangeBar& bar) {
  const QString name = QString::fromStdString(bar.name);
  if (bar.ranges <= 1) return name;
  if (!name.isEmpty()) return QStringLiteral("%1 \u00d7%2").arg(name).arg(bar.ranges);
  return QStringLiteral("%1 ranges").arg(bar.ranges);
}

QString RangeBarsOverlay::barLabel(const viewdata::RangeBar& bar, double room,
                                   const QFontMetricsF& metrics) {
  const QString full = barText(bar);
  if (metrics.horizontalAdvance(full) <= room) return full;
  // "44 r…" said neither what nor how many: the count is what a group's bar is for.
  if (bar.ranges > 1) {
    const QString count = bar.name.empty() ? QString::number(bar.ranges)
                                           : QStringLiteral(" \u00d7%1").arg(bar.ranges);
    if (!bar.name.empty()) {
      const QString name = metrics.elidedText(QString::fromStdString(bar.name), Qt::ElideRight,
                                              room - metrics.horizontalAdvance(count));
      if (name.size() >= 3) return name + count;
    }
    const QString alone = count.trimmed();
    return metrics.horizontalAdvance(alone) <= room ? alone : QString();
  }
  const QString cut = metrics.elidedText(full, Qt::ElideRight, room);
  return cut.size() < 3 ? QString() : cut;  // "…" and a letter say nothing
}

void RangeBarsOverlay::place(const viewdata::RangeBarsData& data,
                             const std::function<double(int64_t)>& x_of, bool shown) {
  placed_.clear();
  size_t bars = 0, labels = 0;
  const QRectF plot = chart_->plotArea();
  QFont font = chart_->font();
  font.setPointSizeF(font.pointSizeF() * 0.85);
  const QFontMetricsF metrics(font);
  const double row = std::ceil(metrics.height()) + 4;
  for (size_t i = 0; shown && i < data.bars.size(); ++i) {
    const viewdata::RangeBar& b = data.bars[i];
    const double top = plot.bottom() - double(b.lane + 1) * row;
    if (top < plot.top()) break;  // a plot too low for this lane (bars are by lane)
    double left = std::max(plot.left(), x_of(b.start_ns));
    double right = std::min(plot.right(), x_of(b.end_ns));
    if (right < plot.left() || left > plot.right()) continue;
    if (right - left < kMinBarPx) {
      right = std::min(plot.right(), left + kMinBarPx);
      left = right - kMinBarPx;
    }
    const QRectF rect(left, top + 1, right - left, row - 2);
    const QColor base = b.ranges > 1 && b.name.empty() ? kSeveralColor : colour_of(b.name);
    QColor fill = base;
    fill.setAlpha(110);
    QPen pen(base.darker(140));
    pen.setWidthF(1);
    if (b.ranges > 1) pen.setStyle(Qt::DotLine);  // several ranges in one bar
    QGraphicsRectItem* bar = item(chart_, bars_, bars++);
    bar->setRect(rect);
    bar->setBrush(fill);
    bar->setPen(pen);
    bar->setZValue(kBarZ);
    bar->show();
    placed_.push_back({rect, int(i)});

    const QString text = barLabel(b, rect.width() - 6, metrics);
    if (text.isEmpty()) continue;
    QGraphicsSimpleTextItem* label = item(chart_, labels_, labels++);
    label->setText(text);
    label->setFont(font);
    label->setBrush(QColor(0x20, 0x20, 0x20));
    label->setZValue(kLabelZ);
    label->setPos(rect.left() + 3, rect.top() + (rect.height() - metrics.height()) / 2);
    label->show();
  }
  for (size_t i = bars; i < bars_.size(); ++i) bars_[i]->hide();
  for (size_t i = labels; i < labels_.size(); ++i) labels_[i]->hide();

  // What the lanes leave out, in the row above the top one, at the right: a user who sees
  // three rows should not take them for every level there is.
  const QString hidden = hiddenText(data);
  const double hidden_top = plot.bottom() - double(data.lanes + 1) * row;
  if (!shown || hidden.isEmpty() || data.lanes == 0 || hidden_top < plot.top()) {
    hidden_->hide();
    hidden_back_->hide();
    return;
  }
  // In a narrow plot, shorter (the hover over a bar says it whole), and never past the
  // plot's left edge onto the axis.
  const double room = plot.width() - 8;
  QString text = hidden;
  if (metrics.horizontalAdvance(text) > room) text = shortHiddenText(data);
  if (metrics.horizontalAdvance(text) > room) text = metrics.elidedText(text, Qt::ElideRight, room);
  hidden_->setText(text);
  hidden_->setFont(font);
  hidden_->setBrush(QColor(0x40, 0x40, 0x40));
  hidden_->setZValue(kNoteZ);
  hidden_->setPos(plot.right() - metrics.horizontalAdvance(text) - 4,
                  hidden_top + (row - metrics.height()) / 2);
  hidden_->show();
  // Over the lines, on the chart's background as the step labels are, so that it reads
  // where a line crosses it; nearly opaque, so that the line still shows through.
  const QBrush& chart_back = chart_->backgroundBrush();
  QColor back = chart_back.style() == Qt::SolidPattern ? chart_back.color() : QColor(Qt::white);
  back.setAlpha(225);
  hidden_back_->setRect(hidden_->pos().x() - 2, hidden_->pos().y(),
                        hidden_->boundingRect().width() + 4, hidden_->boundingRect().height());
  hidden_back_->setBrush(back);
  hidden_back_->setPen(Qt::NoPen);
  hidden_back_->setZValue(kNoteZ - 0.1);
  hidden_back_->show();
}

int RangeBarsOverlay::barAt(const QPointF& p) const {
  // Inner lanes last: where bars touch, the innermost is the one meant.
  for (auto it = placed_.rbegin(); it != placed_.rend(); ++it) {
    if (it->rect.adjusted(-1, 0, 1, 0).contains(p)) return it->index;
  }
  return -1;
}

std::vector<QRectF> RangeBarsOverlay::barRects() const {
  std::vector<QRectF> out;
  for (const Placed& p : placed_) out.push_back(p.rect);
  return out;
}

QString RangeBarsOverlay::hiddenLabel() const {
  return hidden_->isVisible() ? hidden_->text() : QString();
}

QRectF RangeBarsOverlay::hiddenRect() const {
  return hidden_->isVisible() ? hidden_->mapRectToParent(hidden_->boundingRect()) : QRectF();
}

QStringList RangeBarsOverlay::labels() const {
  QStringList out;
  for (const QGraphicsSimpleTextItem* t : labels_) {
    if (t->isVisible()) out << t->text();
  }
  return out;
}

}  // namespace memtap::gui
