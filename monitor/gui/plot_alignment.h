// Lining charts up on one time axis: margins that put a chart's plot area where the views
// around it need it, in the window's coordinates.
//
// The curves chart's plot area starts where its own labels end, or further right where a
// view below needs room for labels of its own (the lifetime graph's addresses); the
// overview's plot area spans the same x as the curves'. A chart's labels never lose room:
// its plot area only narrows, by margins added on either side, at most a third of its width.
#pragma once

#include <QChartView>

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

}  // namespace memtap::gui
