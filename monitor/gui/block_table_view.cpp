// See block_table_view.h.
#include "monitor/gui/block_table_view.h"

#include <QLabel>
#include <QVBoxLayout>

namespace memtap::gui {

BlockTableView::BlockTableView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent) {
  (void)state;
  (void)client;
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("The block table: not written yet"), this));
}

}  // namespace memtap::gui
