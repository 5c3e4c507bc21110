// See peak_cursor.h.
#include "monitor/gui/peak_cursor.h"

#include <memory>

#include "monitor/viewdata/breakdown_data.h"

namespace memtap::gui {

void move_cursor_to_peak(ViewState* state, EngineClient* client, QObject* owner,
                         std::function<bool()> scope_ready) {
  if (!state->hasScope() || (scope_ready && !scope_ready())) {
    auto once = std::make_shared<QMetaObject::Connection>();
    *once = QObject::connect(state, &ViewState::scopeChanged, owner,
                             [state, client, owner, once, scope_ready] {
                               QObject::disconnect(*once);
                               move_cursor_to_peak(state, client, owner, scope_ready);
                             });
    return;
  }
  const uint32_t pid = state->pid();
  const int32_t device = state->device();
  client->ask(
      owner,
      [pid, device](const viewdata::EngineView& e) {
        return viewdata::allocated_peak_ns(e, pid, device);
      },
      [state](int64_t t) {
        if (t > 0) state->setCursor(t);
      });
}

}  // namespace memtap::gui
