// See starvation.h.
#include "agent/sender/starvation.h"

#include <fcntl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

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

uint64_t thread_run_delay_ns() {
  const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[96];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  uint64_t on_cpu = 0, waiting = 0;
  if (sscanf(text, "%" SCNu64 " %" SCNu64, &on_cpu, &waiting) != 2) return 0;
  return waiting;
}

}  // namespace memtap
