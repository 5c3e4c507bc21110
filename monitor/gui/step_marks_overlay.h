// The curves' time markers, drawn over the chart's plot area: where each training step
// began (a dotted grey line; numbers at the top at one round stride: "step 10", "20", ...),
// the marks (a small dark triangle on the top edge; the hover names them) and the device's
// out-of-memory failures (a red line, "OOM" at the top, a row lower where it would cover a
// step's number). Steps too close to tell apart are thinned by viewdata (step_marks_data.h);
// a label that would still touch the one before it is left out, its line kept.
#pragma once

#include <QChart>
#include <QGraphicsLineItem>
#include <QGraphicsPolygonItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QStringList>
#include <functional>
#include <vector>

#include "monitor/viewdata/step_marks_data.h"

namespace memtap::gui {

class StepMarksOverlay {
 public:
  explicit StepMarksOverlay(QChart* chart);

  // Lays `data` out over the plot area; x_of gives a time's x in the chart's coordinates.
  // Not `shown` (ViewState::stepMarks()): nothing shows.
  void place(const viewdata::StepMarksData& data, const std::function<double(int64_t)>& x_of,
             bool shown);

  // For tests: what is drawn now.
  std::vector<double> stepXs() const;      // the step lines' x, in the chart's coordinates
  QStringList labels() const;              // the steps' labels left to right, then "OOM"s
  std::vector<QRectF> labelRects() const;  // where each of those is, in the same order
  int marks() const;
  int oomLines() const;

 private:
  template <class Item>
  Item* item(std::vector<Item*>& pool, size_t index);
  void hideFrom(size_t steps, size_t labels, size_t marks, size_t ooms);

  QChart* chart_;
  std::vector<QGraphicsLineItem*> step_lines_;
  std::vector<QGraphicsSimpleTextItem*> labels_;
  std::vector<QGraphicsRectItem*> label_backs_;  // one under each label
  std::vector<QGraphicsPolygonItem*> marks_;
  std::vector<QGraphicsLineItem*> oom_lines_;
};

}  // namespace memtap::gui
