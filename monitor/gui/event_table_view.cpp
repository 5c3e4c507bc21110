// See event_table_view.h.
#include "monitor/gui/event_table_view.h"

#include <QLabel>
#include <QVBoxLayout>

namespace memtap::gui {

EventTableView::EventTableView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent) {
  (void)state;
  (void)client;
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("The event table: not written yet"), this));
}

}  // namespace memtap::gui
