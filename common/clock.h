// Clocks shared by agent and monitor.
//
// Events carry CLOCK_MONOTONIC (read through the vDSO: no syscall, never jumps), so that
// a free's timestamp always precedes that of a malloc returning the same address, also
// across threads. Hello carries one (monotonic, realtime) pair read back to back; the
// monitor maps tsNs to nanoseconds since the Unix epoch with that offset.
#pragma once

#include <time.h>

#include <cstdint>

namespace memtap {

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The calling thread's CPU time: what a thread paces itself by (common/cpu_share.h).
inline uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace memtap
