// The block table: every block of the shown process and device (the block index's, paged
// through BlockQueries::page on the index's thread), sortable by any column, filtered by
// the selected range (blocks live at some moment of it), size and text (owner, Name,
// stacks). The text filter is ViewState::blockFilter (a finding sets it). Selecting a row
// selects the block for every view; a block selected elsewhere is selected here when its
// row is on a loaded page, else the status line names it.
#pragma once

#include <QWidget>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/paged_table.h"
#include "monitor/gui/view_state.h"

namespace memtap::gui {

class BlockTableView : public QWidget {
  Q_OBJECT

 public:
  BlockTableView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);

  PagedTable* pagedTable() { return table_; }
  QTableView* table() { return table_->table(); }
  PagedTableModel* model() { return table_->model(); }
  TableFilterBar* filterBar() { return table_->bar(); }

 private:
  void fetch(size_t offset, size_t count, uint64_t generation);
  void showStatus();
  void showSelected();

  ViewState* state_;
  EngineClient* client_;
  PagedTable* table_;
  bool selecting_ = false;  // selecting the row of ViewState's block: not a user's choice
};

}  // namespace memtap::gui
