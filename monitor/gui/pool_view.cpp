// See pool_view.h.
#include "monitor/gui/pool_view.h"

#include <QLabel>
#include <QVBoxLayout>

namespace memtap::gui {

PoolView::PoolView(ViewState* state, EngineClient* client, QWidget* parent) : QWidget(parent) {
  (void)state;
  (void)client;
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("The pool at an instant: not written yet"), this));
}

}  // namespace memtap::gui
