// Timeline's queries: series lookup, range queries, summaries, time to OOM, memory use.
#include <algorithm>
#include <limits>

#include "monitor/engine/saturating.h"
#include "monitor/engine/timeline/timeline.h"
#include "monitor/engine/timeline/timeline_scope.h"

namespace memtap::timeline {

const char* curve_name(Curve curve) {
  switch (curve) {
    case Curve::kAllocated:
      return "Allocated";
    case Curve::kReserved:
      return "Reserved";
    case Curve::kActive:
      return "Active";
    case Curve::kAppReserved:
      return "App Reserved";
    case Curve::kFragmentation:
      return "Fragmentation";
  }
  return "?";
}

void Timeline::set_capacity(uint32_t pid, int32_t device, int64_t bytes) {
  capacity_overrides_[{pid, device}] = bytes;
}

void Timeline::set_capacity_for_all(int64_t bytes) {
  capacity_for_all_ = bytes;
}

void Timeline::set_detail_source(DetailSource source) {
  detail_source_ = std::move(source);
}

const Scope* Timeline::find_scope(uint32_t pid, int32_t device) const {
  const uint64_t* index = scope_index_.find((uint64_t(pid) << 32) | uint32_t(device));
  return index ? scopes_[size_t(*index)].get() : nullptr;
}

std::vector<ScopeId> Timeline::scopes() const {
  std::vector<ScopeId> out;
  out.reserve(scopes_.size());
  for (const auto& s : scopes_) out.push_back({s->pid, s->device});
  return out;
}

std::vector<SeriesInfo> Timeline::series(uint32_t pid, int32_t device, GroupBy by) const {
  std::vector<SeriesInfo> out;
  const Scope* s = find_scope(pid, device);
  if (!s) return out;
  switch (by) {
    case GroupBy::kOverall:
      for (int c = 0; c < kCurveCount; ++c) {
        SeriesId id = s->curve_ids[stored_curve(Curve(c))];
        SeriesKey key = keys_[id];
        key.curve = Curve(c);
        out.push_back({key, id});
      }
      break;
    case GroupBy::kLayer:
      for (int slot = 0; slot < kLayerSlots; ++slot)
        if (s->layer_series[slot] != kNoSeries)
          out.push_back({keys_[s->layer_series[slot]], s->layer_series[slot]});
      break;
    case GroupBy::kOwner:
    case GroupBy::kStream: {
      const int c = int(allocated_class(s->totals, s->host));
      const GroupIndex& index = (by == GroupBy::kOwner ? s->owners : s->streams)[c];
      index.series_by_group.for_each([&](uint64_t, uint64_t id) {
        out.push_back({keys_[id], SeriesId(id)});
      });
      std::sort(out.begin(), out.end(),
                [](const SeriesInfo& a, const SeriesInfo& b) { return a.key.group < b.key.group; });
      break;
    }
  }
  return out;
}

SeriesId Timeline::find(const SeriesKey& key) const {
  const Scope* s = find_scope(key.pid, key.device);
  if (!s) return kNoSeries;
  switch (key.group_by) {
    case GroupBy::kOverall:
      return s->curve_ids[stored_curve(key.curve)];
    case GroupBy::kLayer:
      return key.group < uint64_t(kLayerSlots) ? s->layer_series[key.group] : kNoSeries;
    case GroupBy::kOwner:
    case GroupBy::kStream: {
      BlockClass blocks = key.blocks;
      if (blocks == BlockClass::kNone) blocks = allocated_class(s->totals, s->host);
      const GroupIndex& index =
          (key.group_by == GroupBy::kOwner ? s->owners : s->streams)[int(blocks)];
      const uint64_t* id = index.series_by_group.find(key.group);
      return id ? SeriesId(*id) : kNoSeries;
    }
  }
  return kNoSeries;
}

const SeriesKey& Timeline::key(SeriesId id) const {
  return keys_.at(id);
}
const Series& Timeline::data(SeriesId id) const {
  return *series_.at(id);
}

CurveQuery Timeline::points(SeriesId id, int64_t t0_ns, int64_t t1_ns, size_t max_points,
                            WideBuckets wide) const {
  const Series& s = *series_.at(id);
  if (detail_source_ && !s.empty() && t0_ns <= t1_ns && !s.window_covers(t0_ns)) {
    std::vector<CurvePoint> points;
    if (detail_source_(keys_[id], t0_ns, t1_ns, points)) {
      CurveQuery q = downsample_points(std::move(points), max_points);
      q.from_detail_source = true;
      return q;
    }
  }
  return s.query(t0_ns, t1_ns, max_points, wide);
}

int64_t Timeline::capacity_of(const Scope& s) const {
  auto it = capacity_overrides_.find({s.pid, s.device});
  if (it != capacity_overrides_.end()) return it->second;
  if (capacity_for_all_ != kUnknown) return capacity_for_all_;
  if (s.reported_capacity_bytes > 0) return s.reported_capacity_bytes;
  return kUnknown;
}

ScopeSummary Timeline::summary(uint32_t pid, int32_t device) const {
  ScopeSummary out;
  out.pid = pid;
  out.device = device;
  const Scope* s = find_scope(pid, device);
  if (!s) return out;
  out.first_ts_ns = s->first_ts_ns;
  out.last_ts_ns = s->last_ts_ns;
  for (int c = 0; c < kCurveCount; ++c) {
    const Series& series = *s->curves[stored_curve(Curve(c))];
    out.peak[c] = series.peak();
    out.final_bytes[c] = series.value();
  }
  out.fragmentation = s->fragmentation;
  out.capacity_bytes = capacity_of(*s);
  out.events = s->events;
  out.mallocs = s->mallocs;
  out.frees = s->frees;
  out.snapshots = s->snapshots;
  out.pool_snapshots = s->pool_snapshots;
  out.pool_max_allocated = s->pool_max_allocated;
  out.pool_max_reserved = s->pool_max_reserved;
  out.clamped_frees = s->clamped_frees;
  out.pool_used_mismatches = s->pool_used_mismatches;
  out.out_of_order = s->out_of_order;
  out.pending_frees = s->pending_frees;
  out.pending_bytes = s->totals.pending_bytes;
  return out;
}

OomForecast Timeline::time_to_oom(uint32_t pid, int32_t device, const OomOptions& options) const {
  const Scope* s = find_scope(pid, device);
  if (!s) return {};
  const SeriesId id = s->curve_ids[kStoredApp];
  const Series& app = *series_[id];
  // Times from a file or a sender are anything int64 holds: the span saturates.
  const int64_t end = s->last_ts_ns, span = saturating_sub(end, s->first_ts_ns);
  const int64_t window = std::max(int64_from_double(double(span) * options.window_fraction),
                                  std::min(options.min_window_ns, span));
  const int64_t start = saturating_sub(end, window);
  // Every point the window holds (a few hundred thousand at most), else the pyramid's
  // buckets: sampling evenly in time keeps a burst of events from outweighing the rest.
  CurveQuery q = points(id, start, end, std::numeric_limits<size_t>::max(), WideBuckets::kKeep);
  std::vector<double> samples = sample_step(q, start, end, options.samples);
  return forecast_oom(samples, start, end, app.value(), capacity_of(*s), options.min_r2,
                      options.max_extrapolation * double(span) * 1e-9);
}

TimelineStats Timeline::stats() const {
  TimelineStats st;
  st.events = events_;
  st.series = series_.size();
  size_t fixed = sizeof(Timeline) + scope_index_.memory_bytes() +
                 series_.capacity() * sizeof(series_[0]) + keys_.capacity() * sizeof(SeriesKey) +
                 scopes_.capacity() * sizeof(scopes_[0]) +
                 (capacity_overrides_.size() + waiting_capacity_.size()) *
                     (sizeof(std::pair<std::pair<uint32_t, int32_t>, int64_t>) + 32);
  for (const auto& s : scopes_) {
    fixed += sizeof(Scope) + s->label_pairs.pairs.capacity() * sizeof(uint64_t) +
             s->label_pairs.numbers.memory_bytes() + s->pending.memory_bytes() +
             s->host_driver_blocks.memory_bytes();
    for (int c = 0; c < kBlockClasses; ++c)
      fixed += s->labelled[c].memory_bytes() + s->owners[c].series_by_group.memory_bytes() +
               s->streams[c].series_by_group.memory_bytes();
  }
  st.memory_bytes = fixed;
  st.memory_bound_bytes = fixed;
  for (size_t id = 0; id < series_.size(); ++id) {
    st.memory_bytes += series_[id]->memory_bytes();
    const bool curve = keys_[id].group_by == GroupBy::kOverall;
    st.memory_bound_bytes +=
        Series::bound_bytes(curve ? config_.curve_limits : config_.group_limits);
  }
  return st;
}

}  // namespace memtap::timeline
