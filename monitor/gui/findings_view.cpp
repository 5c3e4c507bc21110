// See findings_view.h.
#include "monitor/gui/findings_view.h"

#include <QLabel>
#include <QVBoxLayout>

namespace memtap::gui {

FindingsView::FindingsView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent) {
  (void)state;
  (void)client;
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("The findings panel: not written yet"), this));
}

}  // namespace memtap::gui
