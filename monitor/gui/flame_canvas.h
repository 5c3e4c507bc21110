// The flame chart's drawing: time ticks on top, then a band per thread with its Python
// frames as boxes, the outermost on top, at x positions that line up with the curves chart
// (its plot area's edges, ViewState::timeAxisLeft/Right, mapped into this widget). Boxes are
// coloured by their file (a stable hash into a palette), named when wide enough, and tell
// their function, file:line and duration on hover. While a search is on, matching boxes are
// outlined and the rest dimmed. A click on a box asks to zoom to it; a double click on empty
// space, or Backspace, asks to go back. It draws what FlameView gives it and nothing else.
//
// Stacks deeper than the widget is tall scroll under the time ticks, which stay: a scroll bar
// at the right edge (over the margin right of the time axis, so that the axis still lines up
// with the curves'), moved by it, the wheel or the Page Up/Down, Home and End keys. The wheel
// is free for this: time is zoomed in the curves chart, not here.
#pragma once

#include <QRectF>
#include <QScrollBar>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <utility>
#include <vector>

#include "monitor/gui/plot_alignment.h"
#include "monitor/gui/view_state.h"
#include "monitor/viewdata/flame_data.h"

namespace memtap::gui {

class FlameCanvas : public QWidget {
  Q_OBJECT

 public:
  FlameCanvas(ViewState* state, QWidget* parent = nullptr);

  void setData(viewdata::FlameData data);
  const viewdata::FlameData& data() const { return data_; }
  // Spans (indexes in data().spans) matching the search; `searching`: dim the rest.
  void setMatches(std::vector<size_t> matches, bool searching);
  // What to say where there is nothing to draw ("" while there is).
  void setMessage(const QString& text);

  // The time axis' left and right edges in this widget's coordinates, and the times at them.
  SharedTimeAxis axis() const;
  // Boxes drawn by the last paint, and of those the matches outlined (tests).
  int boxesDrawn() const { return boxes_drawn_; }
  int matchesDrawn() const { return matches_drawn_; }
  // The span drawn at `pos` (index in data().spans), or -1; and its tooltip text.
  int spanAt(const QPoint& pos) const;
  QString toolTipFor(size_t span) const;
  // Where span `i` was drawn (its centre), for tests; (-1, -1) if it was not.
  QPoint centreOf(size_t span) const;
  // The depth scroll bar: hidden while every row fits; its value is the pixels scrolled.
  QScrollBar* depthBar() { return depth_bar_; }

 signals:
  void spanClicked(size_t span);
  void backRequested();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  // Where the bands and rows go, unscrolled: each thread's first row's top, the row height,
  // and the bottom of the last band's rows.
  struct Rows {
    std::vector<int> band_top;
    int row_h = 0;
    int bottom = 0;
  };
  Rows layoutRows() const;
  // The scroll bar's range from the rows' height and the widget's (after new data or a resize).
  void updateDepthBar();
  void drawTicks(QPainter& p, const SharedTimeAxis& axis);

  ViewState* state_;
  viewdata::FlameData data_;
  std::vector<char> matched_;  // per span
  bool searching_ = false;
  QString message_;
  QScrollBar* depth_bar_;
  std::vector<std::pair<QRectF, size_t>> drawn_;  // the last paint's boxes
  int boxes_drawn_ = 0;
  int matches_drawn_ = 0;
};

}  // namespace memtap::gui
