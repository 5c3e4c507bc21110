// See flame_view.h.
#include "monitor/gui/flame_view.h"

#include <QLabel>
#include <QVBoxLayout>

namespace memtap::gui {

FlameView::FlameView(ViewState* state, EngineClient* client, QWidget* parent) : QWidget(parent) {
  (void)state;
  (void)client;
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("The Python call-stack flame chart: not written yet"), this));
}

}  // namespace memtap::gui
