// The sender's hold rule (see drain_hold.h).
#include "agent/sender/drain_hold.h"

#include <unistd.h>

#include <algorithm>

#include "common/cpu_share.h"

namespace memtap {

namespace {

// Half the bound stays free for the program: holding must never be why a record is
// dropped (or, with MEMTAP_LOSSLESS, why the program waits).
bool room_to_hold(uint64_t buffered_bytes, uint64_t byte_limit) {
  return buffered_bytes < byte_limit / 2;
}

bool look_due(const DrainHold& h, uint64_t now_ns) {
  return h.last_look_ns == 0 || now_ns - h.last_look_ns >= h.look_every_ns;
}

}  // namespace

bool hold_this_round(DrainHold* h, uint64_t now_ns, uint64_t waiting_slots, uint64_t buffered_bytes,
                     uint64_t byte_limit, ProgramFillsCores program_fills_cores) {
  if (h->hold_ns == 0) return false;
  if (h->held_since_ns != 0) {
    bool go_on = now_ns - h->held_since_ns < h->hold_ns && room_to_hold(buffered_bytes, byte_limit);
    if (go_on && look_due(*h, now_ns)) {
      h->last_look_ns = now_ns;
      go_on = program_fills_cores();
    }
    if (!go_on) h->held_since_ns = 0;
    return go_on;
  }
  const uint64_t since_ns = now_ns > h->last_drain_ns ? now_ns - h->last_drain_ns : 0;
  const bool fast = since_ns > 0 && double(waiting_slots) * 1e9 >=
                                        double(DrainHold::kFastSlotsPerSecond) * double(since_ns);
  if (!fast || !look_due(*h, now_ns) || !room_to_hold(buffered_bytes, byte_limit)) return false;
  h->last_look_ns = now_ns;
  if (!program_fills_cores()) return false;
  h->held_since_ns = now_ns;
  ++h->holds;
  return true;
}

void looked_for(DrainHold* h, uint64_t look_ns) {
  h->look_every_ns = std::max(DrainHold::kLookEveryNs, look_ns * DrainHold::kLookCostShare);
}

void drained(DrainHold* h, uint64_t round_start_ns) {
  h->last_drain_ns = round_start_ns;
}

bool program_fills_the_cores() {
  const ProgramThreads threads = program_runnable_threads(uint32_t(getpid()));
  return threads.program >= usable_cpus();
}

}  // namespace memtap
