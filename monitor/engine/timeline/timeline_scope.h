// The timeline's state for one process on one device (a scope). Internal to the timeline's
// .cpp files: ingest writes it, the queries read it.
#pragma once

#include <array>
#include <cstdint>

#include "monitor/engine/flat_map.h"
#include "monitor/engine/timeline/curve_rules.h"
#include "monitor/engine/timeline/timeline.h"

namespace memtap::timeline {

// Where each of the stored curves is in Scope::curves. Active has no storage of its own
// while it equals Allocated (curve_rules.h).
enum StoredCurve : int { kStoredAllocated, kStoredReserved, kStoredApp, kStoredGap, kStored };

inline int stored_curve(Curve curve) {
  switch (curve) {
    case Curve::kAllocated:
    case Curve::kActive:
      return kStoredAllocated;
    case Curve::kReserved:
      return kStoredReserved;
    case Curve::kAppReserved:
      return kStoredApp;
    case Curve::kFragmentation:
      return kStoredGap;
  }
  return kStoredAllocated;
}

// Group value -> series, with the previous event's answer at hand: most events in a row
// share their owner and stream.
struct GroupIndex {
  FlatMapU64 series_by_group;
  uint64_t last_group = 0;
  SeriesId last_series = kNoSeries;
  uint32_t groups = 0;  // not counting the overflow group
};

struct Scope {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  bool host = true;
  ScopeTotals totals;

  std::array<SeriesId, kStored> curve_ids{};
  std::array<Series*, kStored> curves{};
  std::array<SeriesId, kLayerSlots> layer_series{};
  std::array<GroupIndex, kBlockClasses> owners, streams;
  // Live blocks whose MALLOC carried an owner or a stream, by address: FREE rows do not
  // repeat them. Value: owner series << 32 | stream series.
  std::array<FlatMapU64, kBlockClasses> labelled;

  int64_t first_ts_ns = 0;
  int64_t last_ts_ns = 0;
  uint64_t events = 0, mallocs = 0, frees = 0, snapshots = 0;
  uint64_t clamped_frees = 0, pool_used_mismatches = 0, out_of_order = 0;
  int64_t snapshot_capacity_bytes = kUnknown;
  FragmentationSummary fragmentation{kUnknown, 0, 0, -1, 0};
};

}  // namespace memtap::timeline
