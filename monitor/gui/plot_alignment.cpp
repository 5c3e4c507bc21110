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

}  // namespace memtap::gui
