// The memory curves and, below them, the trend overview of the whole session with the
// range selector that drives every other view.
//
// The curves (Allocated, Reserved, Active, App Reserved, Fragmentation on demand, or one
// line per group) come from the engine at about one point per pixel: its LTTB sample or
// min/max envelope (drawn as a band around the line), every point once the range holds few
// enough. Lines with the same values over the range are drawn one over the other, so the
// note names them (a GPU without a framework pool: all four). Hover shows the exact values and
// time; a click sets the cursor (the instant the pool and breakdown show); a drag selects a range;
// a double-click selects the step (or the range's bar) under the pointer; the wheel zooms. The
// legend (curves_legend.h), in a row above the chart beside the Window menu, toggles a series. The
// training steps, marks and OOMs are drawn over the curves (step_marks_overlay.h), the ranges as
// bars along their bottom (range_bars_overlay.h), and the hover names the step and ranges under
// way.
//
// The overview draws Allocated and Reserved over the whole session; the selection is a
// rectangle to drag, resize with the wheel, move with the arrow keys, or set to a fixed
// width. While following (Live), the range ends at the newest data; scrolling back pauses,
// and the top bar's Live button returns.
#pragma once

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QElapsedTimer>
#include <QGraphicsLineItem>
#include <QGraphicsRectItem>
#include <QLabel>
#include <QLineSeries>
#include <QValueAxis>
#include <QWidget>
#include <vector>

#include "monitor/gui/ask_pacer.h"
#include "monitor/gui/curves_legend.h"
#include "monitor/gui/engine_client.h"
#include "monitor/gui/plot_alignment.h"
#include "monitor/gui/range_bars_overlay.h"
#include "monitor/gui/step_marks_overlay.h"
#include "monitor/gui/view_state.h"
#include "monitor/viewdata/curves_data.h"

namespace memtap::gui {

class CurvesChart : public QChartView {
  Q_OBJECT

 public:
  CurvesChart(ViewState* state, QWidget* parent = nullptr);
  void show(const viewdata::CurvesData& data);
  const viewdata::CurvesData& data() const { return data_; }
  // Whether more events may still come (viewdata::more_may_come): a scope without any says
  // "yet" only then. Set before show().
  void setMoreMayCome(bool more) { more_may_come_ = more; }
  // For tests: the visible series' names, in the legend's order.
  QStringList seriesNames() const;
  // The lines as the legend shows them: name, pen, hidden or not.
  std::vector<LegendEntry> legendEntries() const;
  // Hides a shown line or shows a hidden one (and its band).
  void toggleLine(const QString& name);
  // What hovering at chart time t would show.
  QString hoverText(int64_t t_ns) const;
  // The note shown over the plot ("" when none), and where (this widget's coordinates),
  // for tests.
  QString noteText() const;
  QRect noteRect() const { return note_->geometry(); }
  // The steps, marks and OOMs over the curves (shown while ViewState::stepMarks()).
  const StepMarksOverlay& stepMarks() const { return step_marks_; }
  const RangeBarsOverlay& rangeBars() const { return range_bars_; }

 signals:
  // The lines, or whether one is hidden, changed: the legend reads legendEntries() again.
  void linesChanged();

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  // Selects the range whose bar is under the pointer, else the training step under it (from
  // its start to the next's), as the range every view shows.
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  int64_t timeAt(const QPoint& pos) const;
  // The hover's line for a range's bar.
  QString rangeText(const viewdata::RangeBar& bar) const;
  void placeCursorLine();
  void placeStepMarks();
  // The note in the plot's corner that hides the least of the lines drawn.
  void placeNote();
  void rebuildSeries();

  ViewState* state_;
  QChart* chart_;
  QValueAxis* x_;
  QValueAxis* y_;
  viewdata::CurvesData data_;
  bool more_may_come_ = true;
  double unit_ = 1;
  struct Drawn {
    std::string name;
    QLineSeries* line = nullptr;
    QAreaSeries* band = nullptr;  // every line's, shown while `banded`
    bool banded = false;          // the answer drawn is an envelope: the band shows
    bool hidden = false;          // by the legend
  };
  std::vector<Drawn> drawn_;
  QGraphicsLineItem* hover_line_;
  QGraphicsLineItem* cursor_line_;
  QGraphicsRectItem* drag_rect_;
  QLabel* note_;  // what the chart cannot show (no data yet, groups summed, lines that coincide)
  StepMarksOverlay step_marks_;
  RangeBarsOverlay range_bars_;
  int press_x_ = -1;
  bool dragging_ = false;
};

class OverviewChart : public QChartView {
  Q_OBJECT

 public:
  OverviewChart(ViewState* state, QWidget* parent = nullptr);
  void show(const viewdata::CurvesData& data);
  void placeSelection();

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  int64_t timeAt(double x) const;
  double xAt(int64_t t) const;
  void zoom(double factor, int64_t around);
  void shift(double fraction);

  ViewState* state_;
  QChart* chart_;
  QValueAxis* x_;
  QValueAxis* y_;
  std::vector<QLineSeries*> lines_;
  QGraphicsRectItem* selection_;
  uint64_t shown_ = 0;  // overview_signature of what is drawn: an unchanged one is not redrawn
  enum class Drag { kNone, kMove, kNew } drag_ = Drag::kNone;
  double press_x_ = 0;
  int64_t press_t0_ = 0, press_t1_ = 0;
};

class CurvesPanel : public QWidget {
  Q_OBJECT

 public:
  CurvesPanel(ViewState* state, EngineClient* client, QWidget* parent = nullptr);
  CurvesChart* chart() { return chart_; }
  OverviewChart* overview() { return overview_; }
  CurvesLegend* legend() { return legend_; }
  QComboBox* windowWidthBox() { return width_; }  // "Window": All, 1 s, ..., 1 h
  // Asks the engine again (the refresh tick, and every change of scope, range or grouping):
  // once, however many of those came in the same turn of the event loop.
  void request();
  // New data: request() at most every 100 ms, and every 300 ms while a recording loads
  // (drawing the curves 10 times a second took a tenth of both cores from the loading).
  void dataArrived();

 signals:
  // After each answer was drawn; `lines` is how many curves it has (0: no data yet).
  void drawn(int lines);

 private:
  ViewState* state_;
  EngineClient* client_;
  CurvesChart* chart_;
  OverviewChart* overview_;
  CurvesLegend* legend_;
  QComboBox* width_;
  void ask();
  // Moves the chart's plot area right to state_->timeAxisMinLeft() when its own labels
  // would put it further left, then says where it is (publishTimeAxis()).
  void alignTimeAxis();
  // ViewState::setTimeAxis: the plot area's edges and the range of the answer drawn.
  void publishTimeAxis();
  PlotEdges chart_edges_;
  // The overview's plot area under the curves'.
  void alignOverview();
  PlotAlignment chart_alignment_;
  PlotAlignment overview_alignment_;

  // After an answer whose older part is an envelope: the exact points from the recording.
  void askDetail(const viewdata::CurvesData& coarse);

  AskPacer pacer_;
  bool scheduled_ = false;
  bool detail_in_flight_ = false;
  bool paced_ = false;       // a dataArrived() is waiting for its turn
  QElapsedTimer last_data_;  // since dataArrived() last asked
  uint64_t generation_ = 0;  // answers to requests older than the newest are not drawn
};

}  // namespace memtap::gui
