// The cursor at the Allocated peak of the shown process and device: `--at peak` and the
// breakdown's "At peak" button.
#pragma once

#include <QObject>
#include <functional>

#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"

namespace memtap::gui {

// Asks the engine for the peak (viewdata::allocated_peak_ns) and sets the cursor there; an
// answer after `owner` is gone is dropped. With no process chosen yet (the top bar's
// question for the scopes can still be out when a replay has loaded), or while
// `scope_ready` says the scope chosen is not yet the one wanted (`--device N` before the
// top bar has seen that device), it waits for the scope first.
void move_cursor_to_peak(ViewState* state, EngineClient* client, QObject* owner,
                         std::function<bool()> scope_ready = {});

}  // namespace memtap::gui
