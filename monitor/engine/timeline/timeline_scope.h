// The timeline's state for one process on one device (a scope). Internal to the timeline's
// .cpp files: ingest writes it, the queries read it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "monitor/engine/flat_map.h"
#include "monitor/engine/pool_samples.h"
#include "monitor/engine/timeline/curve_rules.h"
#include "monitor/engine/timeline/timeline.h"

namespace memtap::timeline {

// Where each of the stored curves is in Scope::curves. Active shares Allocated's series
// (its id and Series) until the scope's first framework block whose free is pending: only
// then can the two differ, and most scopes (the host, a device with one stream) never get
// one, so they keep four series, not five (Scope::active_apart).
enum StoredCurve : int {
  kStoredAllocated,
  kStoredReserved,
  kStoredActive,
  kStoredApp,
  kStoredGap,
  kStored
};

inline int stored_curve(Curve curve) {
  switch (curve) {
    case Curve::kAllocated:
      return kStoredAllocated;
    case Curve::kReserved:
      return kStoredReserved;
    case Curve::kActive:
      return kStoredActive;
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

// The (owner series, stream series) pairs a scope's labelled blocks carry, numbered, so
// that a live block keeps a 4-byte number (a 12-byte slot in Scope::labelled) rather than
// both ids: issue 5 allows 100 B of monitor memory per live block. Few pairs exist (groups
// are capped at max_groups each), and consecutive blocks mostly share theirs.
struct LabelPairs {
  std::vector<uint64_t> pairs;  // number -> owner series << 32 | stream series
  FlatMap<uint32_t> numbers;    // owner series << 32 | stream series -> number
  uint64_t last_pair = ~uint64_t{0};
  uint32_t last_number = 0;

  uint32_t number(uint64_t pair) {
    if (pair == last_pair) return last_number;
    uint32_t n;
    if (const uint32_t* found = numbers.find(pair)) {
      n = *found;
    } else {
      n = uint32_t(pairs.size());
      pairs.push_back(pair);
      numbers.put(pair, n);
    }
    last_pair = pair;
    last_number = n;
    return n;
  }
  uint64_t pair(uint32_t number) const { return pairs[number]; }
};

struct Scope {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  bool host = true;
  ScopeTotals totals;

  std::array<SeriesId, kStored> curve_ids{};
  std::array<Series*, kStored> curves{};
  bool active_apart = false;  // Active has its own series (see StoredCurve)
  // Framework blocks whose FREE said free_pending, by address: their size, until their
  // FREE_COMPLETED (ScopeTotals::pending_bytes is the sum).
  FlatMap<uint64_t> pending;
  // On the host, the driver's (HAL) blocks by address: their size. Only older msMemScope
  // files have them there, pinned host memory (curve_rules.h), and their FREEs say N/A, so
  // one may free a device block the file never showed: only a FREE of a block seen here
  // takes bytes away.
  FlatMap<uint64_t> host_driver_blocks;
  PoolSamples pool_samples;  // the device's pool SNAPSHOTs, by component
  std::array<SeriesId, kLayerSlots> layer_series{};
  std::array<GroupIndex, kBlockClasses> owners, streams;
  // Live blocks whose MALLOC carried an owner or a stream, by address: FREE rows do not
  // repeat them. Value: the number of their owner and stream series in label_pairs.
  std::array<FlatMap<uint32_t>, kBlockClasses> labelled;
  LabelPairs label_pairs;

  int64_t first_ts_ns = 0;
  int64_t last_ts_ns = 0;
  uint64_t events = 0, mallocs = 0, frees = 0, snapshots = 0, pool_snapshots = 0;
  uint64_t clamped_frees = 0, pool_used_mismatches = 0, out_of_order = 0, pending_frees = 0;
  // The largest of the pool's own peaks its SNAPSHOTs gave (max_allocated, max_reserved).
  int64_t pool_max_allocated = kUnknown, pool_max_reserved = kUnknown;
  // The newest capacity the recording gave: a SNAPSHOT's total, a device's START_TRACE's.
  int64_t reported_capacity_bytes = kUnknown;
  FragmentationSummary fragmentation{kUnknown, 0, 0, -1, 0};
};

}  // namespace memtap::timeline
