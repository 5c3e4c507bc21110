// See plot_alignment.h.
#include "monitor/gui/plot_alignment.h"

#include <QChart>
#include <algorithm>
#include <cstdlib>

namespace memtap::gui {

PlotEdges align_plot_area(QChartView* view, int want_left, int want_right, PlotAlignment* a) {
  QChart* chart = view->chart();
  const QMargins margins = chart->margins();
  if (a->base_left < 0) {
    a->base_left = margins.left();
    a->base_right = margins.right();
  }
  const QRect in_view = view->mapFromScene(chart->plotArea()).boundingRect();
  PlotEdges edges;
  edges.left = view->viewport()->mapTo(view->window(), in_view.topLeft()).x();
  edges.right = view->viewport()->mapTo(view->window(), in_view.topRight()).x();
  // Where the chart's own labels would put its edges without the margins added before.
  const int natural_left = edges.left - a->added_left;
  const int natural_right = edges.right + a->added_right;
  const int limit = view->width() / 3;
  const int add_left = std::clamp(want_left - natural_left, 0, limit);
  const int add_right = std::clamp(natural_right - want_right, 0, limit);
  // A pixel either way is rounding, not a move: chasing it would lay the chart out forever.
  if (std::abs(add_left - a->added_left) <= 1 && std::abs(add_right - a->added_right) <= 1) {
    edges.settled = true;
    return edges;
  }
  a->added_left = add_left;
  a->added_right = add_right;
  chart->setMargins(QMargins(a->base_left + add_left, margins.top(), a->base_right + add_right,
                             margins.bottom()));
  return edges;
}

std::optional<SharedTimeAxis> shared_time_axis(const ViewState& state, const QWidget* widget,
                                               int min_left) {
  if (state.timeAxisRight() <= state.timeAxisLeft() || state.timeAxisT1() <= state.timeAxisT0()) {
    return std::nullopt;
  }
  SharedTimeAxis axis;
  axis.left = widget->mapFrom(widget->window(), QPoint(state.timeAxisLeft(), 0)).x();
  axis.right = widget->mapFrom(widget->window(), QPoint(state.timeAxisRight(), 0)).x();
  // A pixel of rounding either way is the same axis.
  if (axis.left < min_left - 1 || axis.right <= axis.left + 50 ||
      axis.right > widget->width() + 2) {
    return std::nullopt;
  }
  axis.right = std::min(axis.right, widget->width());
  axis.t0_ns = state.timeAxisT0();
  axis.t1_ns = state.timeAxisT1();
  return axis;
}

double time_x(const SharedTimeAxis& axis, int64_t t_ns) {
  const double span = double(axis.t1_ns - axis.t0_ns);
  if (span <= 0) return axis.left;
  return axis.left + double(t_ns - axis.t0_ns) / span * (axis.right - axis.left);
}

}  // namespace memtap::gui
