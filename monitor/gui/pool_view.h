// The pool at an instant (ViewState::cursor()): each segment as a bar (its length grows with
// its size) with its blocks by address, coloured by state - Allocated, Active, free pending
// (a PTA block freed while another stream still used it, until the pool takes it back), or
// Free where no block lies - and the largest free gap of each marked: where the pool
// fragments. A device's
// segments are the driver's blocks (HAL) and its blocks the framework pool's (PTA); the
// host's segments are its anonymous mappings (pool_data.h).
//
// A click on a block selects it (the lifetime graph shows it, the block table follows); a
// click on a segment's header selects the segment itself (its HAL block). Selecting a
// block anywhere highlights the segment it lies in. Without segments (a host heap), the
// view says so and lists the largest live blocks instead.
#pragma once

#include <QLabel>
#include <QScrollArea>
#include <QTreeWidget>
#include <QWidget>
#include <vector>

#include "monitor/gui/ask_pacer.h"
#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"
#include "monitor/viewdata/pool_data.h"

namespace memtap::gui {

// What each state (viewdata::PoolBlockState) is drawn in, and the legend naming the states
// `d` can show (rich text).
QColor state_color(viewdata::PoolBlockState state);
QString poolLegend(const viewdata::PoolData& d);
// A segment's header line: its address, size and layer, its blocks, how it is used.
QString poolSegmentHeader(const viewdata::PoolSegmentData& s);

class PoolCanvas : public QWidget {
  Q_OBJECT

 public:
  explicit PoolCanvas(ViewState* state, QWidget* parent = nullptr);
  void show(viewdata::PoolData data);
  const viewdata::PoolData& data() const { return data_; }
  // The segment holding the selected block (or being it); -1: none.
  int highlightedSegment() const;
  // For tests: where block `id` is drawn, and segment i's header (empty if not drawn).
  QRect blockRect(int64_t id) const;
  QRect headerRect(int segment) const;
  QSize sizeHint() const override;

 signals:
  void blockClicked(qint64 id);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  int rowHeight() const;
  QRectF barRect(int segment) const;
  double xOf(int segment, uint64_t addr) const;

  ViewState* state_;
  viewdata::PoolData data_;
  uint64_t largest_segment_ = 1;
};

class PoolView : public QWidget {
  Q_OBJECT

 public:
  PoolView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);
  PoolCanvas* canvas() { return canvas_; }
  QTreeWidget* blockList() { return list_; }
  QString summaryText() const { return summary_->text(); }
  void request();

 signals:
  void drawn();

 private:
  void ask();
  void show(viewdata::PoolData d);

  ViewState* state_;
  EngineClient* client_;
  QLabel* summary_;
  QLabel* legend_;
  QScrollArea* scroll_;
  PoolCanvas* canvas_;
  QTreeWidget* list_;  // the largest live blocks, when there are no segments
  AskPacer pacer_;
  bool scheduled_ = false;
};

}  // namespace memtap::gui
