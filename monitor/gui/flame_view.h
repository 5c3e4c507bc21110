// The Python call-stack flame chart. PLACEHOLDER: shows what it will be, until it is written.
#pragma once

#include <QWidget>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"

namespace memtap::gui {

class FlameView : public QWidget {
  Q_OBJECT

 public:
  FlameView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);
};

}  // namespace memtap::gui
