// The event table. PLACEHOLDER: shows what it will be, until it is written.
#pragma once

#include <QWidget>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"

namespace memtap::gui {

class EventTableView : public QWidget {
  Q_OBJECT

 public:
  EventTableView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);
};

}  // namespace memtap::gui
