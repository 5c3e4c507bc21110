// The memory breakdown at an instant. PLACEHOLDER: shows what it will be, until it is written.
#pragma once

#include <QWidget>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"

namespace memtap::gui {

class BreakdownView : public QWidget {
  Q_OBJECT

 public:
  BreakdownView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);
};

}  // namespace memtap::gui
