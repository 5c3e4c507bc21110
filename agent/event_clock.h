// The hot path's clock.
//
// clock_gettime(CLOCK_MONOTONIC) costs ~40 ns on the VMs we run on; rdtsc ~13 ns. Where
// the CPU has an invariant TSC (constant rate, ticking in every power state, synchronised
// across cores, as on every x86-64 server of the last decade), hooks store raw TSC ticks
// and the sender converts them to CLOCK_MONOTONIC nanoseconds (agent/sender/tsc_converter).
// The TSC is monotonic across cores, so the causal order of a free before the malloc that
// reuses its address survives the conversion. Elsewhere hooks store nanoseconds directly.
#pragma once

#include <cstdint>

#include "common/clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace memtap {

// Decided before the first record (real_functions.cpp) and inherited by fork() children.
extern bool g_clock_is_tsc;
// The clock when the first hook ran, i.e. when recording began (for START_TRACE).
extern uint64_t g_trace_start;

inline bool cpu_has_invariant_tsc() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

inline uint64_t event_clock_now() {
#if defined(__x86_64__)
  if (__builtin_expect(g_clock_is_tsc, 1)) return __rdtsc();
#endif
  return monotonic_ns();
}

}  // namespace memtap
