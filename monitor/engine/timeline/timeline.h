// The engine's time series (docs/design.md, monitor/engine/timeline): MemEvents in, in time order,
// from a live session or a recording; for every process on every device the four memory curves
// (Allocated, Reserved, Active, App Reserved; what each is made of: curve_rules.h), the
// fragmentation curve (Reserved - Allocated), and Group By Layer, Owner and Stream; queried
// at any moment (live) or at the end (report): range queries for charts, peaks, the worst
// fragmentation, time to OOM.
//
// Bounded memory for an unbounded session. Each series keeps its newest points at full
// resolution and all of its history as a min/max pyramid (series.h), so its memory is at
// most Series::bound_bytes(limits), whatever the session's length. With the defaults below:
//   a curve series  4,982,288 bytes: 262,144 points * 16 + 12 levels * (1,024 buckets * 64
//                   + 120) + 112
//   a group series    296,224 bytes:   8,192 points * 16 + 10 levels * (256 buckets * 64
//                   + 120) + 112
// A process on a device has 4 curve series (Active shares Allocated's until a framework
// block's free is pending, then 5), one series per layer it uses, and one per owner and per
// stream, at most max_groups of each per kind of block (more share one overflow series).
// Beyond the series, the only memory is a map of the live blocks that carry an owner or
// stream label (FREE rows do not repeat the label) and one of the blocks whose free is
// pending, which follow the live set, not the session. stats() gives the total and the
// bound.
//
// Hot path: no allocation except when a series, a ring or a map grows; a hash probe only
// for blocks that carry an owner or stream label (to find the label again at their FREE)
// and for a scope or group other than the previous event's; a point only for the series
// whose value changed.
//
// A FREE subtracts the size it carries (the FREE rows the engine and msMemScope write carry
// the block's size). A FREE larger than what is live clamps the total at 0 and counts as
// an anomaly (ScopeSummary::clamped_frees): a recording that started after the block was
// allocated, or a lost MALLOC. A FREE_COMPLETED with no pending block counts there too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "monitor/engine/flat_map.h"
#include "monitor/engine/timeline/curve_rules.h"
#include "monitor/engine/timeline/oom_forecast.h"
#include "monitor/engine/timeline/series.h"
#include "monitor/model/mem_event.h"

namespace memtap::timeline {

enum class Curve : uint8_t { kAllocated, kReserved, kActive, kAppReserved, kFragmentation };
constexpr int kCurveCount = 5;
const char* curve_name(Curve curve);  // "Allocated", "Reserved", "Active", "App Reserved", ...

enum class GroupBy : uint8_t { kOverall, kLayer, kOwner, kStream };

// Group values of GroupBy::kLayer are the Layer's number, and this one for the HOST layer's
// anonymous mappings (the heap is Layer::kHost).
constexpr uint64_t kHostMmapGroup = kHostMmapSlot;
// The owner or stream that stands for all of them past TimelineConfig::max_groups.
constexpr uint64_t kOverflowGroup = ~uint64_t{0};

// Names one series. Grouped series are live bytes of the blocks in the group: kLayer those
// of one layer (so HAL next to PTA on a device), kOwner and kStream those Allocated counts,
// split by MemEvent::owner (a StringTable id; 0 for blocks without one) or stream. Their
// `curve` is kAllocated.
struct SeriesKey {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  Curve curve = Curve::kAllocated;
  GroupBy group_by = GroupBy::kOverall;
  uint64_t group = 0;
  // kOwner, kStream: which blocks are split. A device keeps both its framework blocks and
  // its HAL blocks split, since HAL events come first and the framework's may never come;
  // kNone in a lookup means the ones Allocated counts now.
  BlockClass blocks = BlockClass::kNone;
};

using SeriesId = uint32_t;
constexpr SeriesId kNoSeries = ~SeriesId{0};

struct SeriesInfo {
  SeriesKey key;
  SeriesId id = kNoSeries;
};

struct TimelineConfig {
  SeriesLimits curve_limits{1u << 18, {256, 1024, 12}};
  SeriesLimits group_limits{1u << 13, {32, 256, 10}};
  uint32_t max_groups = 256;  // owners (and streams) per process, device and kind of block
};

struct ScopeId {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
};

struct FragmentationSummary {
  // The first moment the gap was at its largest when memory was asked for (a block of those
  // Allocated counts, or a pool sample at a step), and the two curves then. A free is never
  // that moment: the gap a program's teardown leaves in a pool that keeps its segments is
  // not fragmentation anything suffered from; nor a segment, which the pool takes just
  // before the block that needs it.
  int64_t worst_ts_ns = kUnknown;
  int64_t worst_reserved_bytes = 0;
  int64_t worst_allocated_bytes = 0;
  int64_t worst_gap_bytes = 0;
  int64_t final_gap_bytes = 0;
};

struct ScopeSummary {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  int64_t first_ts_ns = kUnknown;
  int64_t last_ts_ns = kUnknown;
  std::array<CurvePoint, kCurveCount> peak{};  // by Curve: the first moment of the highest value
  std::array<int64_t, kCurveCount> final_bytes{};
  FragmentationSummary fragmentation;
  int64_t capacity_bytes = kUnknown;
  uint64_t events = 0;  // MALLOC, FREE, FREE_COMPLETED and SNAPSHOT events of the scope
  uint64_t mallocs = 0;
  uint64_t frees = 0;
  uint64_t snapshots = 0;
  uint64_t pool_snapshots = 0;  // of those, the device pool's (curve_rules.h)
  // The largest of the peaks the pool itself reported with them (Attr max_allocated,
  // max_reserved: torch.cuda.memory_stats()'s, which a program may reset); kUnknown: none.
  int64_t pool_max_allocated = kUnknown;
  int64_t pool_max_reserved = kUnknown;
  uint64_t clamped_frees = 0;         // FREEs larger than what was live (clamped at 0), and
                                      // FREE_COMPLETEDs with no pending block
  uint64_t pending_frees = 0;         // framework FREEs whose block stayed Active (free_pending)
  int64_t pending_bytes = 0;          // of those, still pending at the end
  uint64_t pool_used_mismatches = 0;  // PTA events whose Attr used != the live PTA bytes
  uint64_t out_of_order = 0;          // events older than the scope's previous one
};

struct TimelineStats {
  uint64_t events = 0;  // every event given to add()
  size_t series = 0;
  size_t memory_bytes = 0;        // what the timeline holds now
  size_t memory_bound_bytes = 0;  // the most it can hold with the series and live set it has
};

// Where full-resolution points older than a series' window can come from (the store,
// replaying its events). Fills `out` with the series' points in [t0, t1] (and the one in
// force at t0) and returns true, or returns false; the pyramid answers then.
using DetailSource = std::function<bool(const SeriesKey& key, int64_t t0_ns, int64_t t1_ns,
                                        std::vector<CurvePoint>& out)>;

struct Scope;  // timeline_scope.h

// Not thread-safe: one thread adds events and queries (the engine's thread).
class Timeline {
 public:
  explicit Timeline(TimelineConfig config = {});
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Events in time order (per process and device; an older one is taken as at the time of
  // the newest, and counted). Only MALLOC, FREE, FREE_COMPLETED and SNAPSHOT matter here,
  // and a device's START_TRACE for its capacity.
  void add(const MemEvent* events, size_t count);

  // The capacity time_to_oom measures against. Precedence: set_capacity for the scope,
  // set_capacity_for_all (the user's --capacity-mb, for a recording that does not say it or
  // says it wrong), then the newest SNAPSHOT total or device START_TRACE total (the host's
  // from the agent's samples, a GPU's from cuMemGetInfo).
  void set_capacity(uint32_t pid, int32_t device, int64_t bytes);
  void set_capacity_for_all(int64_t bytes);
  void set_detail_source(DetailSource source);

  std::vector<ScopeId> scopes() const;  // in order of first event
  // kOverall: the five curves (Active has Allocated's id until they can differ: see
  // timeline_scope.h); the others: one per group, by group value (owners and streams: of
  // the blocks Allocated counts now).
  std::vector<SeriesInfo> series(uint32_t pid, int32_t device, GroupBy by) const;
  SeriesId find(const SeriesKey& key) const;  // kNoSeries if there is none
  const SeriesKey& key(SeriesId id) const;
  const Series& data(SeriesId id) const;

  // Points of the series in [t0, t1], at most max_points (see Series::query); from the
  // detail source when the window no longer holds t0 and there is one.
  CurveQuery points(SeriesId id, int64_t t0_ns, int64_t t1_ns, size_t max_points,
                    WideBuckets wide = WideBuckets::kSplit) const;

  ScopeSummary summary(uint32_t pid, int32_t device) const;
  OomForecast time_to_oom(uint32_t pid, int32_t device, const OomOptions& options = {}) const;
  TimelineStats stats() const;

 private:
  Scope& scope_for(uint32_t pid, int32_t device);
  const Scope* find_scope(uint32_t pid, int32_t device) const;
  SeriesId new_series(const SeriesKey& key, const SeriesLimits& limits);
  SeriesId group_series(Scope& s, GroupBy by, BlockClass blocks, uint64_t group);
  void add_device_capacity(uint32_t pid, int32_t device, int64_t bytes);
  void apply_block(Scope& s, const MemEvent& e, int64_t ts, bool is_free);
  void apply_group(SeriesId id, int64_t ts, int64_t size, bool is_free, bool* clamped);
  // asked: the event asked for memory (FragmentationSummary), the moments fragmentation's
  // worst is taken from.
  void update_curves(Scope& s, int64_t ts, bool asked);
  void restart_allocated(Scope& s, int64_t before);
  void add_pending(Scope& s, uint64_t addr, int64_t size);
  void complete_pending(Scope& s, const MemEvent& e);
  void apply_pool_sample(Scope& s, const MemEvent& e);
  void split_active(Scope& s);
  int64_t capacity_of(const Scope& s) const;

  TimelineConfig config_;
  std::vector<std::unique_ptr<Series>> series_;
  std::vector<SeriesKey> keys_;
  std::vector<std::unique_ptr<Scope>> scopes_;
  FlatMapU64 scope_index_;  // (pid << 32 | device) -> index in scopes_
  uint64_t last_scope_key_ = ~uint64_t{0};
  Scope* last_scope_ = nullptr;
  std::map<std::pair<uint32_t, int32_t>, int64_t> capacity_overrides_;
  // Device capacities given before the device's first block made its scope.
  std::map<std::pair<uint32_t, int32_t>, int64_t> waiting_capacity_;
  int64_t capacity_for_all_ = kUnknown;
  DetailSource detail_source_;
  uint64_t events_ = 0;
};

}  // namespace memtap::timeline
