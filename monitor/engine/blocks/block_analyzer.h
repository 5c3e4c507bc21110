// The engine's block-level analyses (docs/design.md, monitor/engine/blocks): fed MemEvents in time
// order, asked at any time (live) or at the end (report).
//
// State per (process, device, layer): live blocks by address (HOST mappings apart from the
// heap), running totals and a lifetime histogram of finished blocks. Per (process, device)
// the blocks counted as Allocated (basis.h) feed, as they come and go: live bytes per
// owner / stack / name with their copy at the peak (peak.h), per-key live bytes at step
// boundaries and the live-bytes trend (leaks.h), finished-block aggregates (lifetimes.h),
// owner and operator / MSTX-range scopes (scopes.h), and inefficient-block tallies
// (inefficiency.h). Device OOMs and the blocks they name are logged as they come (ooms.h). The pool
// (pool_state.h) is drawn from the live tables when asked, and its worst moments are sampled at
// segment changes and steps.
//
// A PTA block whose FREE says free_pending leaves the live table and its account at that
// FREE, like any block: its lifetime (for Allocated, peak, leaks, lifetimes) ends when the
// program lets go of it. Until its FREE_COMPLETED it waits in the device's pending table,
// which only the pool reads (active_pending_free, pool_state.h). A device pool's SNAPSHOT
// gives the pool's reserved bytes, as a PTA event's Attr total does.
//
// Memory: O(live blocks + keys x window_steps + owner prefixes + scope names + open
// scopes + top_n), whatever the number of finished blocks and events.
// Speed: the live-block path (MALLOC/FREE) does a few flat-table lookups and O(1)
// arithmetic, plus O(depth) for blocks allocated inside operators / ranges / owner levels.
//
// Queries for a (pid, device) never seen return empty results (found / source say so).
// Not thread-safe: one thread feeds and asks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "monitor/engine/blocks/basis.h"
#include "monitor/engine/blocks/inefficiency.h"
#include "monitor/engine/blocks/leaks.h"
#include "monitor/engine/blocks/lifetimes.h"
#include "monitor/engine/blocks/ooms.h"
#include "monitor/engine/blocks/peak.h"
#include "monitor/engine/blocks/pool_state.h"
#include "monitor/engine/blocks/scopes.h"
#include "monitor/model/mem_event.h"

namespace memtap::blocks {

struct BlockAnalyzerOptions {
  size_t top_n = 10;  // entries per breakdown, suspects per list, blocks per category
  LeakOptions leaks;
  InefficiencyOptions inefficiency;  // applied as blocks are freed: set before feeding
  // A fragmentation evaluation is skipped when fewer than live pool blocks / this many pool
  // events happened since the previous one (pool_state.h).
  uint32_t fragmentation_amortization = 16;
};

struct DeviceKey {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  bool operator==(const DeviceKey&) const = default;
};

struct AnalyzerState;

class BlockAnalyzer {
 public:
  // strings must outlive the analyzer; it may grow between calls (ids are stable).
  explicit BlockAnalyzer(const StringTable& strings, BlockAnalyzerOptions options = {});
  ~BlockAnalyzer();
  BlockAnalyzer(const BlockAnalyzer&) = delete;
  BlockAnalyzer& operator=(const BlockAnalyzer&) = delete;

  // Events in time order (ties in any order; equal times keep the order given).
  void add(const MemEvent* events, size_t n);

  uint64_t events() const;                 // events added
  int64_t now_ns() const;                  // the latest event time; kNoTime before any event
  std::vector<DeviceKey> devices() const;  // (pid, device) pairs with memory events, in order seen
  Basis basis(uint32_t pid, int32_t device) const;
  // Bytes the analyzer's containers hold (capacity, not just size): what the memory bound
  // above is about, for tests and the monitor's own accounting.
  size_t state_bytes() const;

  PeakResult peak(uint32_t pid, int32_t device) const;
  LeakResult leaks(uint32_t pid, int32_t device) const;
  // The figures (leaks.h StepFigures) of the steps under way over [t0_ns, t1_ns], in time
  // order, of the first kKeptStepFigures steps, the latest kRecentStepFigures and the one
  // under way now: the window's hover. Cheap: no leak verdicts.
  std::vector<StepFigures> step_figures(uint32_t pid, int32_t device, int64_t t0_ns,
                                        int64_t t1_ns) const;
  // The pool now (now_ns()). For a past instant, see replay_pool_state.
  PoolState pool_state(uint32_t pid, int32_t device, bool with_blocks = true) const;
  FragmentationResult fragmentation(uint32_t pid, int32_t device) const;
  InefficiencyResult inefficient_blocks(uint32_t pid, int32_t device) const;
  ScopeResult scopes(uint32_t pid, int32_t device) const;
  LifetimeResult lifetimes(uint32_t pid, int32_t device) const;
  // (pid, device) pairs with an OOM, and their OOMs.
  std::vector<DeviceKey> oom_devices() const;
  OomResult ooms(uint32_t pid, int32_t device) const;

 private:
  std::unique_ptr<AnalyzerState> s_;
};

// The pool of (pid, device) at a past instant t_ns: replays events[0..n) up to and
// including t_ns into a fresh analyzer (events in time order, from the session's start:
// the store pages them in). O(events up to t_ns).
PoolState replay_pool_state(const MemEvent* events, size_t n, const StringTable& strings,
                            uint32_t pid, int32_t device, int64_t t_ns, bool with_blocks = true);

}  // namespace memtap::blocks
