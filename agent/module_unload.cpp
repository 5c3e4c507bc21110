// See module_unload.h.
#include "agent/module_unload.h"

#include "agent/agent_state.h"
#include "agent/crash_flush.h"
#include "agent/raw_syscalls.h"
#include "agent/stacks.h"
#include "common/clock.h"

namespace memtap {

ModuleScanWords g_module_scan;

void report_modules_before_unload() {
  // Only the program's own calls, while a sender runs and C stacks are taken; the agent's
  // dlclose (its CUDA probe) runs busy.
  if (!g_stack_settings.c || !g_agent.sender_stop || !hooks_record() ||
      g_agent.stopped.load(std::memory_order_relaxed)) {
    return;
  }
  const uint32_t ticket = g_module_scan.requested.fetch_add(1, std::memory_order_acq_rel) + 1;
  // Cuts the sender's drain-interval wait short (it waits on this word).
  raw_futex_wake_all(&g_crash_flush.requested);
  const uint64_t deadline = monotonic_ns() + kModuleScanWaitNs;
  for (;;) {
    const uint32_t done = g_module_scan.done.load(std::memory_order_acquire);
    if (int32_t(done - ticket) >= 0) return;
    const uint64_t now = monotonic_ns();
    if (now >= deadline) return;
    raw_futex_wait(&g_module_scan.done, done, deadline - now);
  }
}

}  // namespace memtap
