// Capturing the return addresses of the calling thread's stack (C stacks, MEMTAP_STACKS=c).
//
// The hot path of a stacked allocation: only addresses are taken here; the monitor
// symbolises them (monitor/symbols/symbolizer.h) with the modules the sender reports.
#pragma once

namespace memtap {

// At agent start, with tl_agent_busy set: whatever the unwinder must load or look up once,
// so that no capture inside an application's malloc does it.
void unwind_warm_up();

// Writes up to `max` return addresses of the calling thread, innermost first (the caller of
// this function first), and returns how many. Async-signal-safe where the method allows;
// never allocates through the hooked allocator.
int capture_return_addresses(void** out, int max);

}  // namespace memtap
