// Events held back until every running process has promised nothing older will come.
//
// Events arrive per thread, already in time order, so they are held as runs (one thread's
// events of one batch, or one SYSTEM row) and merged: a min-heap over the runs' oldest
// events. Taking the oldest event costs O(log runs), not O(log events), and a run's memory
// goes back as soon as the merge has passed its last event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memtap {

// What a held event does when it is applied: the wire's event kinds, and the SYSTEM rows.
enum class HeldKind : uint8_t {
  kMalloc,
  kFree,
  kMmap,
  kMunmap,
  kFork,
  kRssSample,
  kStartTrace,
  kStopTrace,
  // The training run's context (wire.capnp step .. traceSlice).
  kStep,
  kMark,
  kRangeStart,
  kRangeEnd,
  kOwnerPush,
  kOwnerPop,
  kOpStart,
  kOpEnd,
  kPythonStack,
  kCStack,
  kTraceSlice,
  // GPU memory (wire.capnp deviceMalloc .. deviceStream).
  kDeviceMalloc,
  kDeviceFree,
  kPinnedMalloc,
  kPinnedFree,
  kKernelLaunch,
  kDeviceOom,
  kDeviceInfo,
  kDeviceStream,
  // The framework's pool, layer PTA (wire.capnp poolMalloc .. poolPeaks).
  kPoolMalloc,
  kPoolFree,
  kPoolFreeCompleted,
  kPoolState,
  kPoolPeaks,
};

// HeldEvent::pool_follow of a kPoolFree: what its thread does next (other than deviceStream
// records), decided when its batch is taken; and of a kPoolFreeCompleted, whether it was
// folded into the FREE before it.
enum class PoolFollow : uint8_t {
  kPending,    // kPoolFree: the block's completion is not its thread's next event
  kCompleted,  // kPoolFree: it is (the pool took the block back at once); kPoolFreeCompleted:
               // folded into that FREE, no row of its own
  kOpen,       // kPoolFree: its thread's events in its batch end first; the process's next
               // batch says (Session: open pool frees)
};

struct HeldEvent {
  int64_t epoch_ns = 0;
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  HeldKind kind = HeldKind::kMalloc;
  PoolFollow pool_follow = PoolFollow::kPending;  // kPoolFree, kPoolFreeCompleted: see PoolFollow
  uint16_t device = 0;                            // device and pool kinds: the CUDA ordinal
  // The agent instance's string id, resolved only when the event is applied: its
  // definition may arrive in a later batch than the event.
  uint32_t string_id = 0;
};
static_assert(sizeof(HeldEvent) == 32,
              "pool_follow, the device and the string id fit in what was padding");

struct HeldRun {
  size_t process = 0;  // the session's index of the process
  uint32_t thread_id = 0;
  std::vector<HeldEvent> events;  // epoch_ns non-decreasing
  size_t next = 0;                // first event not yet taken
  uint64_t arrival = 0;           // breaks ties between runs: the earlier arrival goes first
};

struct ReorderBuffer {
  std::vector<HeldRun> heap;  // min-heap by (oldest event's time, arrival)
  uint64_t arrivals = 0;
  size_t held_events = 0;
};

// Holds a run; its events must be in non-decreasing time order. Empty runs are dropped.
void hold_run(ReorderBuffer& buffer, HeldRun run);

// The run holding the oldest event (its events[next]); only when held_events > 0.
const HeldRun& oldest_run(const ReorderBuffer& buffer);

// Drops the oldest event (after the caller has applied it).
void drop_oldest(ReorderBuffer& buffer);

}  // namespace memtap
