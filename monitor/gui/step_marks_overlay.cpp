// See step_marks_overlay.h.
#include "monitor/gui/step_marks_overlay.h"

#include <QBrush>
#include <QFont>
#include <QFontMetricsF>
#include <QPen>
#include <QPolygonF>
#include <algorithm>
#include <cmath>
#include <optional>

namespace memtap::gui {

namespace {

// Under the hover and cursor lines (z 19-20) and the drag rectangle (18), over the series.
constexpr qreal kStepZ = 6;
constexpr qreal kLabelZ = 7;
constexpr qreal kOomZ = 8;
constexpr qreal kLabelGapPx = 6;  // a label closer than this to the one before is left out

const QColor kStepColor(0x70, 0x70, 0x70);
const QColor kMarkColor(0x44, 0x44, 0x44);
const QColor kOomColor(0xd6, 0x27, 0x28);

}  // namespace

StepMarksOverlay::StepMarksOverlay(QChart* chart) : chart_(chart) {}

template <class Item>
Item* StepMarksOverlay::item(std::vector<Item*>& pool, size_t index) {
  while (pool.size() <= index) {
    auto* made = new Item(chart_);
    made->hide();
    pool.push_back(made);
  }
  return pool[index];
}

void StepMarksOverlay::hideFrom(size_t steps, size_t labels, size_t marks, size_t ooms) {
  for (size_t i = steps; i < step_lines_.size(); ++i) step_lines_[i]->hide();
  for (size_t i = labels; i < labels_.size(); ++i) labels_[i]->hide();
  for (size_t i = labels; i < label_backs_.size(); ++i) label_backs_[i]->hide();
  for (size_t i = marks; i < marks_.size(); ++i) marks_[i]->hide();
  for (size_t i = ooms; i < oom_lines_.size(); ++i) oom_lines_[i]->hide();
}

void StepMarksOverlay::place(const viewdata::StepMarksData& data,
                             const std::function<double(int64_t)>& x_of, bool shown) {
  if (!shown) return hideFrom(0, 0, 0, 0);
  const QRectF plot = chart_->plotArea();
  QFont font = chart_->font();
  font.setPointSizeF(font.pointSizeF() * 0.85);
  size_t steps = 0, labels = 0, marks = 0, ooms = 0;
  const QFontMetricsF metrics(font);
  // Labels in two rows: the steps' in the first, an OOM's in the first where it covers no
  // step's label, else in the second, so that neither hides the other ("step 3" under
  // "OOM" read "step" beside a GPU run's OOM, which comes inside a step, often just after
  // its line). A label that would touch the one before it in its row is left out.
  double row_right[2] = {-1e9, -1e9};
  std::vector<QRectF> step_labels;
  // Where the label went; nullopt where it was left out.
  const auto label = [&](const QString& text, double x, const QColor& color,
                         int row) -> std::optional<QRectF> {
    const double left = x + 3;
    if (left < row_right[row] + kLabelGapPx) return std::nullopt;
    const double width = metrics.horizontalAdvance(text);
    // It would run past the plot's right edge.
    if (left + width > plot.right()) return std::nullopt;
    QGraphicsSimpleTextItem* t = item(labels_, labels++);
    t->setText(text);
    t->setFont(font);
    t->setBrush(color);
    t->setZValue(kLabelZ);
    t->setPos(left, plot.top() + 7 + row * metrics.height());  // below the marks' triangles
    t->show();
    row_right[row] = left + t->boundingRect().width();
    // On the chart's background, so that the lines of the steps between cross under it.
    QGraphicsRectItem* back = item(label_backs_, labels - 1);
    back->setRect(t->pos().x() - 1, t->pos().y(), t->boundingRect().width() + 2,
                  t->boundingRect().height());
    back->setBrush(chart_->backgroundBrush());
    back->setPen(Qt::NoPen);
    back->setZValue(kLabelZ - 0.5);
    back->show();
    return back->rect();
  };

  // The steps drawn, then which of them are labelled: every k-th (k = 1, 2, 5, 10, ...) by
  // the same rule the lines are thinned by, k as small as leaves room for the widest label,
  // so that the labels run evenly ("step 10", "20", "30") instead of skipping where they
  // happen to touch.
  struct Drawn {
    double x;
    uint64_t number;
  };
  std::vector<Drawn> drawn;
  for (const viewdata::TimeMark& s : data.steps) {
    if (!viewdata::step_drawn(data, s)) continue;
    const double x = x_of(s.ts_ns);
    if (x >= plot.left() && x <= plot.right()) drawn.push_back({x, s.number});
  }
  double spacing = plot.width();
  for (size_t i = 1; i < drawn.size(); ++i)
    spacing = std::min(spacing, drawn[i].x - drawn[i - 1].x);
  const double widest = metrics.horizontalAdvance(
      QStringLiteral("step %1").arg(drawn.empty() ? 0 : drawn.back().number));
  const uint64_t every = viewdata::round_at_least(
      uint64_t(std::ceil((widest + 3 + kLabelGapPx) / std::max(spacing, 0.5))));
  const auto on_stride = [&](size_t i) {
    return data.every_step ? drawn[i].number % (every * data.step_stride) == 0 : i % every == 0;
  };
  // Where no step drawn is on the stride (steps 1-8, labels every 10th), the first is labelled.
  bool any_on_stride = false;
  for (size_t i = 0; i < drawn.size(); ++i) any_on_stride = any_on_stride || on_stride(i);
  QPen step_pen(kStepColor);
  step_pen.setWidthF(1);
  step_pen.setDashPattern({1.0, 3.0});
  bool first_label = true;
  for (size_t i = 0; i < drawn.size(); ++i) {
    QGraphicsLineItem* line = item(step_lines_, steps++);
    line->setPen(step_pen);
    line->setZValue(kStepZ);
    line->setLine(drawn[i].x, plot.top(), drawn[i].x, plot.bottom());
    line->show();
    const bool labelled = any_on_stride ? on_stride(i) : i == 0;
    if (!labelled) continue;
    const std::optional<QRectF> at =
        label(first_label ? QStringLiteral("step %1").arg(drawn[i].number)
                          : QString::number(drawn[i].number),
              drawn[i].x, kStepColor, 0);
    if (at) {
      first_label = false;
      step_labels.push_back(*at);
    }
  }

  // An OOM's label competes with the OOMs' labels before it in either row (two OOMs a few
  // pixels apart are one label, not a staircase), and with the steps' only by covering one
  // (then it takes the second row).
  row_right[0] = row_right[1] = -1e9;
  QPen oom_pen(kOomColor);
  oom_pen.setWidthF(1.5);
  for (const viewdata::TimeMark& o : data.ooms) {
    const double x = x_of(o.ts_ns);
    if (x < plot.left() || x > plot.right()) continue;
    QGraphicsLineItem* line = item(oom_lines_, ooms++);
    line->setPen(oom_pen);
    line->setZValue(kOomZ);
    line->setLine(x, plot.top(), x, plot.bottom());
    line->show();
    const QString text = QStringLiteral("OOM");
    const double left = x + 3 - kLabelGapPx;
    const double right = x + 3 + metrics.horizontalAdvance(text) + kLabelGapPx;
    const bool covers_a_step =
        std::any_of(step_labels.begin(), step_labels.end(),
                    [&](const QRectF& r) { return r.left() < right && left < r.right(); });
    const int row = covers_a_step ? 1 : 0;
    if (label(text, x, kOomColor, row)) row_right[1 - row] = row_right[row];
  }

  const QPolygonF triangle({QPointF(-4, 0), QPointF(4, 0), QPointF(0, 6)});
  for (const viewdata::TimeMark& m : data.marks) {
    const double x = x_of(m.ts_ns);
    if (x < plot.left() || x > plot.right()) continue;
    QGraphicsPolygonItem* mark = item(marks_, marks++);
    mark->setPolygon(triangle);
    mark->setBrush(kMarkColor);
    mark->setPen(Qt::NoPen);
    mark->setZValue(kLabelZ);
    mark->setPos(x, plot.top());
    mark->show();
  }
  hideFrom(steps, labels, marks, ooms);
}

std::vector<double> StepMarksOverlay::stepXs() const {
  std::vector<double> xs;
  for (const QGraphicsLineItem* l : step_lines_) {
    if (l->isVisible()) xs.push_back(l->line().x1());
  }
  return xs;
}

QStringList StepMarksOverlay::labels() const {
  QStringList out;
  for (const QGraphicsSimpleTextItem* t : labels_) {
    if (t->isVisible()) out << t->text();
  }
  return out;
}

std::vector<QRectF> StepMarksOverlay::labelRects() const {
  std::vector<QRectF> out;
  for (const QGraphicsSimpleTextItem* t : labels_) {
    if (t->isVisible()) out.push_back(t->sceneBoundingRect());
  }
  return out;
}

int StepMarksOverlay::marks() const {
  int n = 0;
  for (const QGraphicsPolygonItem* m : marks_) n += m->isVisible() ? 1 : 0;
  return n;
}

int StepMarksOverlay::oomLines() const {
  int n = 0;
  for (const QGraphicsLineItem* l : oom_lines_) n += l->isVisible() ? 1 : 0;
  return n;
}

}  // namespace memtap::gui
