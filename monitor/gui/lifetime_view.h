// The block lifetime graph. PLACEHOLDER: shows what it will be, until it is written.
#pragma once

#include <QWidget>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"

namespace memtap::gui {

class LifetimeView : public QWidget {
  Q_OBJECT

 public:
  LifetimeView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);
};

}  // namespace memtap::gui
