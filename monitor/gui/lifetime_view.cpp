// See lifetime_view.h.
#include "monitor/gui/lifetime_view.h"

#include <QLabel>
#include <QVBoxLayout>

namespace memtap::gui {

LifetimeView::LifetimeView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent) {
  (void)state;
  (void)client;
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("The block lifetime graph: not written yet"), this));
}

}  // namespace memtap::gui
