// For tests of pacing: uses the calling thread's CPU for a given time of its own CPU clock,
// so that what a pacer is charged does not depend on the machine's load.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace memtap::test {

inline void burn_cpu(std::chrono::nanoseconds how_long) {
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  volatile uint64_t sink = 0;
  do {
    for (int i = 0; i < 10000; ++i) sink = sink + i;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1'000'000'000LL + (now.tv_nsec - start.tv_nsec) <
           how_long.count());
}

}  // namespace memtap::test
