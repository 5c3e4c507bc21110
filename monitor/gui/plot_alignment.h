// Lining charts up on one time axis: margins that put a chart's plot area where the views
// around it need it, in the window's coordinates.
//
// The curves chart's plot area starts where its own labels end, or further right where a
// view below needs room for labels of its own (the lifetime graph's addresses); the
// overview's plot area spans the same x as the curves'. A chart's labels never lose room:
// its plot area only narrows, by margins added on either side, at most a third of its width.
#pragma once

#include <QChartView>
#include <cstdint>
#include <optional>

#include "monitor/gui/view_state.h"

namespace memtap::gui {

// One chart's margins as align_plot_area() left them.
struct PlotAlignment {
  int base_left = -1, base_right = -1;  // the chart's own margins, read at the first call
  int added_left = 0, added_right = 0;
};

// Where a chart's plot area lies now, in its window's coordinates.
struct PlotEdges {
  int left = 0, right = 0;
  bool settled = false;  // false: the margins changed, plotAreaChanged comes again
};

// Moves `view`'s plot area to start at `want_left` or its own labels' end, whichever is
// further right, and to end at `want_right` or its own end, whichever is further left.
PlotEdges align_plot_area(QChartView* view, int want_left, int want_right, PlotAlignment* a);

// The curves' time axis in `widget`'s coordinates: its edges and the times at them.
struct SharedTimeAxis {
  int left = 0, right = 0;
  int64_t t0_ns = 0, t1_ns = 0;
};

// The curves' axis (ViewState::timeAxisLeft()...) where it lies across `widget` and starts
// no further left than `min_left`, the room the widget's own labels take; nullopt where it
// does not (the widget alone in a window, the chart not laid out or empty): the widget then
// draws on its own margins and range.
std::optional<SharedTimeAxis> shared_time_axis(const ViewState& state, const QWidget* widget,
                                               int min_left);

// x of time `t_ns` on `axis`.
double time_x(const SharedTimeAxis& axis, int64_t t_ns);

}  // namespace memtap::gui
