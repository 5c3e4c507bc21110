// The Python call-stack flame chart over the selected range: the process's python_trace_<pid>
// slices or, without them, its allocations' Python stacks (flame_data.h), drawn by a
// FlameCanvas lined up with the curves' time axis.
//
// Above it: what the boxes come from, a search box (matches outlined, the rest dimmed, "N
// matches, total X s"), and Back. A click on a box sets the range to it (every view zooms);
// Back, Backspace or a double click on empty space returns to the range before.
//
// The spans are read on the store's thread (FlameReader, kept while the recording's path
// stays the same) for the range and the chart's width: a change of range, scope or size, and
// every refresh while data arrives, asks again, coalesced (one read in flight, then once
// more if anything changed meanwhile). While the reader is still indexing a large recording,
// each answer is drawn and the next part is asked for. Hidden, the view asks nothing.
#pragma once

#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <vector>

#include "monitor/gui/ask_pacer.h"
#include "monitor/gui/elided_label.h"
#include "monitor/gui/engine_client.h"
#include "monitor/gui/flame_canvas.h"
#include "monitor/gui/view_state.h"

namespace memtap::viewdata {
class FlameReader;
}

namespace memtap::gui {

class FlameView : public QWidget {
  Q_OBJECT

 public:
  FlameView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);
  ~FlameView() override;

  FlameCanvas* canvas() { return canvas_; }
  QLineEdit* searchBox() { return search_; }
  QPushButton* backButton() { return back_; }
  // "N matches, total X s" while searching; else "".
  QString matchText() const { return matches_->text(); }
  // What the chart shows: its source and bound, or why it is empty.
  QString sourceText() const { return source_->fullText(); }
  // The same as shown: ending in "…" where the bar has no room for all of it.
  QString sourceShown() const { return source_->text(); }
  // Reads asked so far (tests: a change of range asks again).
  int reads() const { return reads_; }

 signals:
  // After each answer was drawn: the spans it has.
  void drawn(int spans);

 protected:
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void request();
  void ask();
  void show(viewdata::FlameData data);
  void applySearch();
  void zoomTo(size_t span);
  void back();

  ViewState* state_;
  EngineClient* client_;
  FlameCanvas* canvas_;
  QLineEdit* search_;
  QLabel* matches_;
  ElidedLabel* source_;
  QPushButton* back_;
  std::shared_ptr<viewdata::FlameReader> reader_;  // used on the store's thread only
  struct Range {
    int64_t t0, t1;
    bool following;
  };
  std::vector<Range> history_;  // ranges before each zoom, for Back
  bool scheduled_ = false;
  AskPacer pacer_;
  int reads_ = 0;
};

}  // namespace memtap::gui
