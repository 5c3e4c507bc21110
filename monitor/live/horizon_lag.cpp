// See horizon_lag.h.
#include "monitor/live/horizon_lag.h"

#include <algorithm>

namespace memtap {

void HorizonLag::saw_hello(int64_t took_ns, int64_t now_ns) {
  // A start in the future (another host's clock ahead of ours) teaches nothing.
  if (took_ns <= 0) return;
  if (took_ns >= slowest_ns_ || now_ns - slowest_at_ns_ >= kMemoryNs) {
    slowest_ns_ = took_ns;
    slowest_at_ns_ = now_ns;
  }
}

int64_t HorizonLag::lag_ns(int64_t now_ns) const {
  if (slowest_ns_ == 0 || now_ns - slowest_at_ns_ >= kMemoryNs) return configured_ns_;
  return std::max(configured_ns_, std::min(kMaxNs, 2 * slowest_ns_));
}

}  // namespace memtap
