// The event table: the recording's rows (memscope_dump's columns), paged straight from the
// SQLite file on the store's thread (viewdata/event_pages.h), never all in memory. Sortable
// by any column; filtered by the selected range, the shown process and device (with the
// rows of no device: steps, markers, operators), the event kind, size and text (owner,
// Name, stacks).
#pragma once

#include <QComboBox>
#include <QWidget>
#include <memory>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/paged_table.h"
#include "monitor/gui/view_state.h"

namespace memtap::viewdata {
class EventPages;
}

namespace memtap::gui {

class EventTableView : public QWidget {
  Q_OBJECT

 public:
  EventTableView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);

  PagedTable* pagedTable() { return table_; }
  QTableView* table() { return table_->table(); }
  PagedTableModel* model() { return table_->model(); }
  TableFilterBar* filterBar() { return table_->bar(); }
  QComboBox* kindBox() { return kinds_; }

 private:
  void fetch(size_t offset, size_t count, uint64_t generation, bool again);
  void showStatus();

  ViewState* state_;
  EngineClient* client_;
  PagedTable* table_;
  QComboBox* kinds_;
  // Used on the store's thread only (its connection and cached positions); shared with
  // the questions in flight, so it outlives the view until they are answered.
  std::shared_ptr<viewdata::EventPages> pages_;
};

}  // namespace memtap::gui
