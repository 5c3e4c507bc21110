// See starvation.h.
#include "agent/sender/starvation.h"

namespace memtap {

bool StarvationWatch::starved(uint64_t wall_ns, uint64_t (*run_delay)()) {
  if (last_wall_ns_ == 0 || wall_ns - last_wall_ns_ >= kReadEveryNs) {
    const uint64_t delay = run_delay();
    if (last_wall_ns_ != 0 && wall_ns > last_wall_ns_ && delay >= last_delay_ns_) {
      const uint64_t interval = wall_ns - last_wall_ns_;
      const uint64_t waited = delay - last_delay_ns_;
      if (waited >= kMinWaitNs && waited * 2 >= interval) starved_until_ns_ = wall_ns + kHoldNs;
    }
    last_wall_ns_ = wall_ns;
    last_delay_ns_ = delay;
  }
  return wall_ns < starved_until_ns_;
}

}  // namespace memtap
