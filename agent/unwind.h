// Capturing the return addresses of the calling thread's stack (C stacks, MEMTAP_STACKS=c).
//
// The hot path of a stacked allocation: only addresses are taken here; the monitor
// symbolises them (monitor/symbols/symbolizer.h) with the modules the sender reports.
#pragma once

#include <cstdint>

namespace memtap {

// At agent start, with tl_agent_busy set: whatever the unwinder must load or look up once,
// so that no capture inside an application's malloc does it (dlopen of libunwind.so.8,
// libgcc_s through a first backtrace()). MEMTAP_UNWIND picks the method, for benchmarks:
// unset, the frame-pointer walk with libunwind behind it; "libunwind" or "backtrace" alone.
void unwind_warm_up();

// Writes up to `max` return addresses of the calling thread, innermost first (the caller of
// this function first), and returns how many. Async-signal-safe where the method allows;
// never allocates through the hooked allocator.
int capture_return_addresses(void** out, int max);

// Code in [lo, hi) was unmapped (agent/unloaded_code.h), and other code mapped there later
// may keep no frame pointer where this did: forgets what the frame-pointer walk learnt of its
// return addresses, and has a libunwind answer through the range taken again with
// backtrace() (libunwind's own per-thread cache of the old code cannot be flushed).
// Lock-free for the captures: a capture racing it sees each verdict whole, the old one or
// none, and may learn it again (the cost of a fallback, never a wrong stack).
void forget_unmapped_code(uintptr_t lo, uintptr_t hi);

// Forgets every verdict: when what was unmapped cannot be told exactly. Each stack is
// learnt again, with one fallback.
void forget_all_verdicts();

// What the captures took since the start, counted only with MEMTAP_UNWIND_STATS=1 (then also
// printed to stderr at exit): a fallback is a capture that the frame-pointer walk could not
// finish (libunwind or backtrace() took it); frames and ns are summed over the captures.
struct UnwindCounts {
  uint64_t captures, frames, ns;
  uint64_t fallbacks, fallback_frames, fallback_ns;
};
UnwindCounts unwind_counts();

}  // namespace memtap
