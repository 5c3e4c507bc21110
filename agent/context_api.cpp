// The training run's context: the memtap_* C ABI of agent/memtap.h (steps, marks,
// ranges, owners, operators, tracer slices, interned text).
//
// Each call writes one record into the calling thread's buffer through the hooks' own path
// (record_event_with_string, event_clock_now): no lock, no syscall, nothing when the agent is not
// recording. The monitor gives the records their meaning (wire.capnp, EventKind).
#include <atomic>

#include "agent/agent_state.h"
#include "agent/event_buffer_writer.h"
#include "agent/event_clock.h"
#include "agent/memtap.h"
#include "agent/string_log.h"

#define MEMTAP_EXPORT extern "C" __attribute__((visibility("default")))

namespace memtap {

namespace {

// Steps of this process, for SYSTEM STEP's number. Process-wide like g_agent: any thread
// may call memtap_step. A fork() child counts its own from 1 (context_after_fork_child).
std::atomic<uint64_t> g_steps{0};

inline void record_context(EventKind kind, uint32_t string_id, uint64_t addr = 0,
                           uint64_t size_bytes = 0) {
  if (!hooks_record()) return;
  record_event_with_string(&g_agent.registry, g_agent.lossless, kind, addr, size_bytes,
                           event_clock_now(), string_id);
}

}  // namespace

void context_after_fork_child() {
  g_steps.store(0, std::memory_order_relaxed);
}

}  // namespace memtap

using memtap::EventKind;
using memtap::record_context;

MEMTAP_EXPORT uint32_t memtap_intern(const char* text, size_t length) {
  if (!memtap::hooks_record()) return 0;
  return memtap::string_log_intern(text, length);
}

MEMTAP_EXPORT void memtap_step(void) {
  if (!memtap::hooks_record()) return;
  uint64_t step = memtap::g_steps.fetch_add(1, std::memory_order_relaxed) + 1;
  record_context(EventKind::kStep, 0, step);
}

MEMTAP_EXPORT void memtap_mark(uint32_t text_id) {
  record_context(EventKind::kMark, text_id);
}

MEMTAP_EXPORT void memtap_range_start(uint32_t name_id) {
  record_context(EventKind::kRangeStart, name_id);
}

MEMTAP_EXPORT void memtap_range_end(uint32_t name_id) {
  record_context(EventKind::kRangeEnd, name_id);
}

MEMTAP_EXPORT void memtap_owner_push(uint32_t name_id) {
  record_context(EventKind::kOwnerPush, name_id);
}

MEMTAP_EXPORT void memtap_owner_pop(void) {
  record_context(EventKind::kOwnerPop, 0);
}

MEMTAP_EXPORT void memtap_op_start(uint32_t name_id) {
  record_context(EventKind::kOpStart, name_id);
}

MEMTAP_EXPORT void memtap_op_end(uint32_t name_id) {
  record_context(EventKind::kOpEnd, name_id);
}

// start_ns and end_ns are already CLOCK_MONOTONIC nanoseconds: the sender converts only
// the record's ts_ns from TSC ticks, never addr and size_bytes.
MEMTAP_EXPORT void memtap_trace_slice(uint32_t func_id, uint64_t start_ns, uint64_t end_ns) {
  record_context(EventKind::kTraceSlice, func_id, start_ns, end_ns);
}
