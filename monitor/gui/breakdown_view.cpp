// See breakdown_view.h.
#include "monitor/gui/breakdown_view.h"

#include <QLabel>
#include <QVBoxLayout>

namespace memtap::gui {

BreakdownView::BreakdownView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent) {
  (void)state;
  (void)client;
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("The memory breakdown at an instant: not written yet"), this));
}

}  // namespace memtap::gui
