// Timeline::add and what it calls: the hot path. See timeline.h for what the curves are
// and what memory they take.
#include <algorithm>
#include <limits>

#include "monitor/engine/timeline/timeline.h"
#include "monitor/engine/timeline/timeline_scope.h"

namespace memtap::timeline {

namespace {

uint64_t scope_key(uint32_t pid, int32_t device) {
  return (uint64_t(pid) << 32) | uint32_t(device);
}

void append_if_changed(Series& series, int64_t ts, int64_t value) {
  if (series.empty() || series.value() != value) series.append(ts, value);
}

}  // namespace

Timeline::Timeline(TimelineConfig config) : config_(config) {}
Timeline::~Timeline() = default;

SeriesId Timeline::new_series(const SeriesKey& key, const SeriesLimits& limits) {
  SeriesId id = SeriesId(series_.size());
  series_.push_back(std::make_unique<Series>(limits));
  keys_.push_back(key);
  return id;
}

Scope& Timeline::scope_for(uint32_t pid, int32_t device) {
  const uint64_t key = scope_key(pid, device);
  // Any key is possible, the initial ~0 too (pid 4294967295 on the host).
  if (last_scope_ != nullptr && key == last_scope_key_) return *last_scope_;
  Scope* scope;
  if (const uint64_t* index = scope_index_.find(key)) {
    scope = scopes_[size_t(*index)].get();
  } else {
    scope_index_.put(key, scopes_.size());
    scopes_.push_back(std::make_unique<Scope>());
    scope = scopes_.back().get();
    scope->pid = pid;
    scope->device = device;
    scope->host = device < 0;
    scope->layer_series.fill(kNoSeries);
    if (auto waiting = waiting_capacity_.find({pid, device}); waiting != waiting_capacity_.end()) {
      scope->reported_capacity_bytes = waiting->second;
      waiting_capacity_.erase(waiting);
    }
    static constexpr Curve kStoredCurves[kStored] = {Curve::kAllocated, Curve::kReserved,
                                                     Curve::kActive, Curve::kAppReserved,
                                                     Curve::kFragmentation};
    for (int c = 0; c < kStored; ++c) {
      if (c == kStoredActive) continue;  // Allocated's, until apart (timeline_scope.h)
      SeriesId id = new_series({pid, device, kStoredCurves[c]}, config_.curve_limits);
      scope->curve_ids[c] = id;
      scope->curves[c] = series_[id].get();
    }
    scope->curve_ids[kStoredActive] = scope->curve_ids[kStoredAllocated];
    scope->curves[kStoredActive] = scope->curves[kStoredAllocated];
  }
  last_scope_key_ = key;
  last_scope_ = scope;
  return *scope;
}

void Timeline::add(const MemEvent* events, size_t count) {
  events_ += count;
  for (size_t i = 0; i < count; ++i) {
    const MemEvent& e = events[i];
    if (e.kind == MemEventKind::kTraceStart && e.device >= 0 && e.snap_total > 0) {
      add_device_capacity(e.pid, e.device, e.snap_total);
      continue;
    }
    if (e.kind != MemEventKind::kMalloc && e.kind != MemEventKind::kFree &&
        e.kind != MemEventKind::kSnapshot && e.kind != MemEventKind::kFreeCompleted)
      continue;
    // An event of no device ("N/A") that is about memory can only be the host's.
    Scope& s = scope_for(e.pid, e.device < 0 ? kHostDevice : e.device);
    int64_t ts = e.ts_ns;
    if (s.events == 0) {
      s.first_ts_ns = ts;
    } else if (ts < s.last_ts_ns) {
      ts = s.last_ts_ns;  // keeps every series sorted by time, which the queries rely on
      ++s.out_of_order;
    }
    s.last_ts_ns = ts;
    ++s.events;
    if (e.kind == MemEventKind::kSnapshot) {
      ++s.snapshots;
      if (e.snap_app_reserved >= 0) s.totals.app_sample_bytes = e.snap_app_reserved;
      if (e.snap_total > 0) s.reported_capacity_bytes = e.snap_total;
      if (is_pool_snapshot(e)) {
        ++s.pool_snapshots;
        s.pool_max_allocated = std::max(s.pool_max_allocated, e.snap_max_allocated);
        s.pool_max_reserved = std::max(s.pool_max_reserved, e.snap_max_reserved);
        apply_pool_sample(s, e);
      }
    } else if (e.kind == MemEventKind::kFreeCompleted) {
      complete_pending(s, e);
    } else {
      apply_block(s, e, ts, e.kind == MemEventKind::kFree);
    }
    // Reserved memory left unallocated costs something when memory is asked for: a block
    // of those Allocated counts, or a pool sample at a step. Not a free (a program's
    // teardown frees every block its pool keeps segments for), nor a segment (the pool
    // takes it just before the block that needs it).
    const bool asked =
        is_pool_snapshot(e) ||
        (e.kind == MemEventKind::kMalloc &&
         block_class(layer_slot(e.layer, e.is_mmap), s.host) == allocated_class(s.totals, s.host));
    update_curves(s, ts, asked);
  }
}

// A device's capacity (its START_TRACE): the scope's if it has one, else kept for the scope
// its first block will make. No scope of its own: a device with no block has no curves.
void Timeline::add_device_capacity(uint32_t pid, int32_t device, int64_t bytes) {
  if (const uint64_t* index = scope_index_.find(scope_key(pid, device))) {
    scopes_[size_t(*index)]->reported_capacity_bytes = bytes;
  } else {
    waiting_capacity_[{pid, device}] = bytes;
  }
}

void Timeline::apply_block(Scope& s, const MemEvent& e, int64_t ts, bool is_free) {
  const int slot = layer_slot(e.layer, e.is_mmap);
  const int64_t size = e.size_bytes > uint64_t(std::numeric_limits<int64_t>::max())
                           ? std::numeric_limits<int64_t>::max()
                           : int64_t(e.size_bytes);
  if (s.host && slot == int(Layer::kHal)) {
    uint64_t seen_size = 0;
    if (!is_free) {
      s.host_driver_blocks.put(e.addr, uint64_t(size));
    } else if (!s.host_driver_blocks.take(e.addr, &seen_size)) {
      ++s.frees;
      ++s.clamped_frees;  // as a FREE of more than is live: it changes no curve
      return;
    }
  }
  bool clamped = false;
  int64_t& live = s.totals.live_bytes[slot];
  if (!is_free) {
    live = saturating_add(live, size);
    ++s.mallocs;
  } else {
    ++s.frees;
    if (size > live) {
      live = 0;
      clamped = true;
    } else {
      live -= size;
    }
  }
  // After pool samples Allocated already is the framework's (curve_rules.h): no restart.
  const bool first_framework_block =
      is_framework_slot(slot) && !s.host && !has_framework_pool(s.totals);
  s.totals.seen_slots |= uint16_t(1u << slot);
  if (first_framework_block) restart_allocated(s, 0);
  SeriesId& layer = s.layer_series[slot];
  if (layer == kNoSeries)
    layer = new_series({s.pid, s.device, Curve::kAllocated, GroupBy::kLayer, uint64_t(slot)},
                       config_.group_limits);
  append_if_changed(*series_[layer], ts, live);

  if (is_free && e.free_pending && is_framework_slot(slot)) add_pending(s, e.addr, size);

  if (is_framework_slot(slot) && e.pool_total >= 0) {
    s.totals.pool_total_bytes[slot] = e.pool_total;
    s.totals.pool_total_slots |= uint16_t(1u << slot);
  }
  if (slot == int(Layer::kPta) && e.pool_used >= 0 && e.pool_used != live) ++s.pool_used_mismatches;

  const BlockClass blocks = block_class(slot, s.host);
  if (blocks != BlockClass::kNone) {
    const int c = int(blocks);
    SeriesId owner = kNoSeries, stream = kNoSeries;
    FlatMap<uint32_t>& labelled = s.labelled[c];
    uint32_t number;
    // On a MALLOC too: an entry still there is a block whose FREE was lost, and must not
    // lend its label to this one.
    if (!labelled.empty() && labelled.take(e.addr, &number) && is_free) {
      const uint64_t packed = s.label_pairs.pair(number);
      owner = SeriesId(packed >> 32);
      stream = SeriesId(packed);
    }
    if (owner == kNoSeries) {
      owner = group_series(s, GroupBy::kOwner, blocks, e.owner);
      stream = group_series(s, GroupBy::kStream, blocks, e.stream);
    }
    apply_group(owner, ts, size, is_free, &clamped);
    apply_group(stream, ts, size, is_free, &clamped);
    if (!is_free && (e.owner != 0 || e.stream != 0))
      labelled.put(e.addr, s.label_pairs.number((uint64_t(owner) << 32) | stream));
  }
  if (clamped) ++s.clamped_frees;
}

// A FREE with free_pending: the block leaves Allocated (apply_block) but stays Active until
// its FREE_COMPLETED. A second pending FREE at an address still pending means the first
// one's completion was lost: its bytes go and the anomaly is counted.
void Timeline::add_pending(Scope& s, uint64_t addr, int64_t size) {
  if (!s.active_apart) split_active(s);
  ++s.pending_frees;
  uint64_t old = 0;
  if (s.pending.take(addr, &old)) {
    s.totals.pending_bytes = std::max<int64_t>(0, s.totals.pending_bytes - int64_t(old));
    ++s.clamped_frees;
  }
  s.pending.put(addr, uint64_t(size));
  s.totals.pending_bytes = saturating_add(s.totals.pending_bytes, size);
}

// FREE_COMPLETED: the pool took the block back; its bytes leave Active. The size is the
// pending FREE's (the completion's own is only a copy); a completion with nothing pending
// at its address changes nothing and counts as clamped (curve_rules.h).
void Timeline::complete_pending(Scope& s, const MemEvent& e) {
  uint64_t size = 0;
  if (s.pending.empty() || !s.pending.take(e.addr, &size)) {
    ++s.clamped_frees;
    return;
  }
  s.totals.pending_bytes = std::max<int64_t>(0, s.totals.pending_bytes - int64_t(size));
}

// A device pool's figures (curve_rules.h): reserved as PTA's pool total, and allocated for
// Allocated while the device has no framework block. The first such sample restarts
// Allocated as a first framework block does, but at its own value: the samples come at the
// end of each step, and the pool already held its weights before the first (0 there
// would make the time before it the worst fragmentation of the run).
//
// A device whose pool samples come per component (a torch_npu profile's PTA and GE) has
// the sum of their newest figures (pool_samples.h).
void Timeline::apply_pool_sample(Scope& s, const MemEvent& e) {
  const int slot = int(Layer::kPta);
  int64_t allocated = kUnknown, reserved = kUnknown;
  s.pool_samples.add(e, &allocated, &reserved);
  if (reserved >= 0) {
    s.totals.pool_total_bytes[slot] = reserved;
    s.totals.pool_total_slots |= uint16_t(1u << slot);
  }
  if (allocated < 0 || (s.totals.seen_slots & kFrameworkSlots) != 0) return;
  const bool first = s.totals.pool_sample_allocated == kUnknown;
  s.totals.pool_sample_allocated = allocated;
  if (first) restart_allocated(s, allocated);
}

// Active gets a series of its own, a copy of Allocated's so far (they were equal until now).
void Timeline::split_active(Scope& s) {
  const SeriesId id = SeriesId(series_.size());
  series_.push_back(std::make_unique<Series>(*s.curves[kStoredAllocated]));
  keys_.push_back({s.pid, s.device, Curve::kActive});
  s.curve_ids[kStoredActive] = id;
  s.curves[kStoredActive] = series_[id].get();
  s.active_apart = true;
}

// Until a device's first framework block, its Allocated stood in with the HAL bytes. Once
// the framework shows up that history is wrong (the framework had 0 bytes in blocks then),
// and left alone it would show the first segment as a spike of Allocated and make it the
// peak. So Allocated restarts at `before` (0 for a first block) from the scope's first
// event, and Fragmentation (then Reserved - before) is rebuilt from Reserved; both only
// while Reserved's window still holds its whole history, which it does unless hundreds of
// thousands of driver events came first.
void Timeline::restart_allocated(Scope& s, int64_t before) {
  const Series& reserved = *s.curves[kStoredReserved];
  if (reserved.empty() || reserved.window().first_index() != 0) return;
  auto allocated = std::make_unique<Series>(config_.curve_limits);
  auto gap = std::make_unique<Series>(config_.curve_limits);
  allocated->append(reserved.first_ts_ns(), before);
  for (size_t i = 0; i < reserved.window().size(); ++i) {
    const CurvePoint& p = reserved.window().at(i);
    append_if_changed(*gap, p.ts_ns, std::max<int64_t>(0, p.value_bytes - before));
  }
  // In the rewritten history nothing Allocated counts was asked for (FragmentationSummary):
  // the worst moment is still to come, this very event at the latest (a gap of 0 too).
  FragmentationSummary f;
  f.worst_gap_bytes = -1;
  f.final_gap_bytes = gap->value();
  s.fragmentation = f;
  series_[s.curve_ids[kStoredAllocated]] = std::move(allocated);
  series_[s.curve_ids[kStoredGap]] = std::move(gap);
  s.curves[kStoredAllocated] = series_[s.curve_ids[kStoredAllocated]].get();
  s.curves[kStoredGap] = series_[s.curve_ids[kStoredGap]].get();
  if (!s.active_apart) s.curves[kStoredActive] = s.curves[kStoredAllocated];
}

SeriesId Timeline::group_series(Scope& s, GroupBy by, BlockClass blocks, uint64_t group) {
  GroupIndex& index = (by == GroupBy::kOwner ? s.owners : s.streams)[int(blocks)];
  if (index.last_series != kNoSeries && index.last_group == group) return index.last_series;
  SeriesId id;
  if (const uint64_t* found = index.series_by_group.find(group)) {
    id = SeriesId(*found);
  } else {
    uint64_t stored = index.groups < config_.max_groups ? group : kOverflowGroup;
    if (const uint64_t* overflow = index.series_by_group.find(stored)) {
      id = SeriesId(*overflow);
    } else {
      id = new_series({s.pid, s.device, Curve::kAllocated, by, stored, blocks},
                      config_.group_limits);
      index.series_by_group.put(stored, id);
      if (stored != kOverflowGroup) ++index.groups;
    }
  }
  index.last_group = group;
  index.last_series = id;
  return id;
}

void Timeline::apply_group(SeriesId id, int64_t ts, int64_t size, bool is_free, bool* clamped) {
  Series& series = *series_[id];
  int64_t value = series.value();
  if (!is_free) {
    value = saturating_add(value, size);
  } else if (size > value) {
    value = 0;
    *clamped = true;
  } else {
    value -= size;
  }
  append_if_changed(series, ts, value);
}

void Timeline::update_curves(Scope& s, int64_t ts, bool asked) {
  const CurveValues v = derive_curves(s.totals, s.host);
  append_if_changed(*s.curves[kStoredAllocated], ts, v.allocated);
  append_if_changed(*s.curves[kStoredReserved], ts, v.reserved);
  if (s.active_apart) append_if_changed(*s.curves[kStoredActive], ts, v.active);
  append_if_changed(*s.curves[kStoredApp], ts, v.app_reserved);
  append_if_changed(*s.curves[kStoredGap], ts, v.fragmentation);
  FragmentationSummary& f = s.fragmentation;
  if (asked && v.fragmentation > f.worst_gap_bytes) {
    f.worst_ts_ns = ts;
    f.worst_reserved_bytes = v.reserved;
    f.worst_allocated_bytes = v.allocated;
    f.worst_gap_bytes = v.fragmentation;
  }
  f.final_gap_bytes = v.fragmentation;
}

}  // namespace memtap::timeline
