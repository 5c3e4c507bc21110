// The block lifetime graph: the blocks live in the selected range as rectangles over time
// (allocation to free) and address (a compressed axis: the gaps between occupied address
// ranges collapse to a marked band), coloured by layer or by owner. A click selects a block
// (ViewState::selectBlock) and a panel opens below that says everything about it: size,
// owner, operator, times, thread, allocation_id and both stacks; a click beside the blocks
// puts the selection down and the panel away. A block selected elsewhere (the
// pool, the block table) is outlined, and the range moves to it when it lies outside. The
// training steps and OOMs are lines across the blocks, at the curves' x.
//
// A range can hold millions of blocks: the graph draws the largest 20,000 (and the selected
// one) and says how many there were.
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QSplitter>
#include <QTextBrowser>
#include <QWidget>
#include <vector>

#include "monitor/gui/ask_pacer.h"
#include "monitor/gui/elided_label.h"
#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"
#include "monitor/viewdata/lifetime_data.h"
#include "monitor/viewdata/step_marks_data.h"

namespace memtap::gui {

class LifetimeGraph : public QWidget {
  Q_OBJECT

 public:
  LifetimeGraph(ViewState* state, QWidget* parent = nullptr);
  void show(viewdata::LifetimeData data);
  void setColorByOwner(bool on);
  // What the graph says instead of blocks ("" when it draws some).
  void setMessage(const QString& text);
  const viewdata::LifetimeData& data() const { return data_; }
  const QString& message() const { return message_; }
  // For tests: where block `id` is drawn (empty if it is not).
  QRect blockRect(int64_t id) const;
  // The steps and OOMs of the range (viewdata/step_marks_data.h), drawn as lines across the
  // blocks at the curves' x while ViewState::stepMarks(): the blocks each step left live
  // show as the staircase they make. Their labels are the curves'.
  void setStepMarks(viewdata::StepMarksData marks);
  // Where the step lines and the OOM lines are drawn (x in this widget); none while hidden.
  std::vector<double> stepLineXs() const;
  std::vector<double> oomLineXs() const;
  // Where the details are while no block is selected (drawn at the legend's right where it
  // fits); "" once one is, or while no block is drawn.
  QString hintText() const;
  // For tests: the plot's rectangle in this widget.
  QRectF plotRect() const { return axis().plot; }

 signals:
  void blockClicked(qint64 id);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void moveEvent(QMoveEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  int labelsWidth() const;  // the address labels' room left of the plot
  // Tells the curves above where this graph's plot can start (ViewState::timeAxisMinLeft).
  void publishLabelsWidth();
  // The plot's rectangle and the times at its left and right edges.
  struct Axis {
    QRectF plot;
    int64_t t0_ns = 0, t1_ns = 0;
  };
  Axis axis() const;
  double xOf(const Axis& a, int64_t t) const;
  // The x of each of `marks` the graph draws (of step_marks_'s steps when `steps`: those
  // step_drawn), in the time axis; none while hidden or without blocks.
  std::vector<double> lineXs(const std::vector<viewdata::TimeMark>& marks, bool steps) const;
  void layoutBlocks();
  QColor colorOf(const viewdata::BlockRow& b) const;

  ViewState* state_;
  viewdata::LifetimeData data_;
  std::vector<QRectF> rects_;  // data_.blocks' rectangles, same order
  viewdata::StepMarksData step_marks_;
  bool by_owner_ = false;
  QString message_;
};

class LifetimeView : public QWidget {
  Q_OBJECT

 public:
  LifetimeView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);
  LifetimeGraph* graph() { return graph_; }
  QComboBox* colorBox() { return color_by_; }
  QString countText() const { return count_->fullText(); }
  QString detailText() const { return detail_->toPlainText(); }
  // Whether the detail panel shows (it does while a block is selected), and its height.
  bool detailShown() const { return detail_->isVisibleTo(this); }
  int detailHeight() const { return detail_->height(); }
  // Asks again, once however many changes came in the same turn of the event loop.
  void request();

 signals:
  void drawn();

 private:
  void ask();
  void askDetail(int64_t id);
  void showDetail(const viewdata::BlockRow& b);
  void reveal(const viewdata::LifetimeData& d);
  void showDetailPanel(bool on);

  ViewState* state_;
  EngineClient* client_;
  ElidedLabel* count_;
  QComboBox* color_by_;
  QSplitter* split_;
  LifetimeGraph* graph_;
  QTextBrowser* detail_;
  bool detail_sized_ = false;  // given its first height (a third); the user's drag after that
  AskPacer pacer_;
  bool scheduled_ = false;
  // The selection changed and the answer for it has not come: bring it into the range then.
  bool reveal_pending_ = false;
  int64_t detail_for_ = -1;  // the block the detail panel shows (or was asked about)
};

}  // namespace memtap::gui
