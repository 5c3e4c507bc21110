// See analyzer.h. The analyses live in timeline/ and blocks/; this file feeds them and
// turns their results into the Report's words. Their byte counts are uint64; the Report's
// are int64, so each is clamped on the way (a sum of absurd sizes must not read negative).
#include "monitor/engine/analyzer.h"

#include <algorithm>
#include <thread>

#include "monitor/engine/blocks/block_analyzer.h"
#include "monitor/engine/saturating.h"
#include "monitor/engine/step_marks.h"
#include "monitor/engine/timeline/timeline.h"

namespace memtap {

namespace {

blocks::BlockAnalyzerOptions block_options(const AnalyzerOptions& o) {
  blocks::BlockAnalyzerOptions b;
  b.top_n = o.top_entries;
  // Absolute thresholds: a fraction of the lifetime does not apply on top of them.
  b.inefficiency.lazy_used = {o.lazy_used_ns, 0};
  b.inefficiency.delayed_free = {o.delayed_free_ns, 0};
  b.inefficiency.long_idle = {o.long_idle_ns, 0};
  return b;
}

int64_t known_time(int64_t ts_ns) {
  return ts_ns == blocks::kNoTime ? kUnknown : ts_ns;
}

std::vector<BreakdownEntry> breakdown(const std::vector<blocks::PeakEntry>& entries) {
  std::vector<BreakdownEntry> out;
  for (const blocks::PeakEntry& e : entries) {
    out.push_back(
        {e.key.label, clamp_to_int64(e.bytes), int64_t(e.blocks), e.share, breakdown(e.stacks)});
  }
  return out;
}

std::vector<BreakdownEntry> alive(const std::vector<blocks::AliveGroup>& groups,
                                  uint64_t total_bytes) {
  std::vector<BreakdownEntry> out;
  for (const blocks::AliveGroup& g : groups) {
    double share = total_bytes ? double(g.bytes) / double(total_bytes) : 0;
    out.push_back(
        {g.key.label, clamp_to_int64(g.bytes), int64_t(g.blocks), share, breakdown(g.stacks)});
  }
  return out;
}

void add_suspects(const char* what, const std::vector<blocks::LeakSuspect>& in,
                  int64_t last_step_ns, std::vector<LeakSuspect>* out) {
  for (const blocks::LeakSuspect& s : in) {
    out->push_back({what, s.key.label, s.bytes_per_step, int64_t(s.growth_start_step), s.last_bytes,
                    known_time(s.growth_start_ns), known_time(last_step_ns), breakdown(s.stacks)});
  }
}

void add_category(const char* name, const blocks::InefficiencyCategory& c, size_t top,
                  std::vector<InefficientBlock>* out) {
  for (size_t i = 0; i < c.top.size() && i < top; ++i) {
    const blocks::InefficientBlock& b = c.top[i];
    out->push_back({name, b.addr, clamp_to_int64(b.size_bytes), b.owner_label, b.name_label,
                    b.gap_ns, known_time(b.alloc_ts_ns), known_time(b.gap_start_ns)});
  }
}

std::vector<LayerSummary> layers(const timeline::Timeline& timeline, uint32_t pid, int32_t device) {
  std::vector<LayerSummary> out;
  for (const timeline::SeriesInfo& info : timeline.series(pid, device, timeline::GroupBy::kLayer)) {
    const timeline::Series& series = timeline.data(info.id);
    const bool mmap = info.key.group == timeline::kHostMmapGroup;
    LayerSummary layer;
    layer.layer = layer_name(mmap ? Layer::kHost : Layer(info.key.group), mmap);
    if (!series.empty()) {
      layer.peak_ns = series.peak().ts_ns;
      layer.peak_bytes = series.peak().value_bytes;
      layer.final_bytes = series.value();
    }
    out.push_back(layer);
  }
  return out;
}

// The device's framework pool, from its curves (analyzer's device_report fills both).
PoolSection pool_section(const DeviceReport& d, const timeline::ScopeSummary& s) {
  PoolSection p;
  if (d.device < 0) return p;
  const bool blocks = std::any_of(d.layers.begin(), d.layers.end(), [](const LayerSummary& l) {
    return l.layer == layer_name(Layer::kPta);
  });
  if (blocks)
    p.source = "blocks";
  else if (s.pool_snapshots != 0)
    p.source = "samples";
  else
    return p;
  for (const CurveSummary& c : d.curves) {
    if (c.name == timeline::curve_name(timeline::Curve::kAllocated)) p.allocated = c;
    if (c.name == timeline::curve_name(timeline::Curve::kReserved)) p.reserved = c;
    if (c.name == timeline::curve_name(timeline::Curve::kActive)) p.active = c;
  }
  p.snapshots = s.pool_snapshots;
  p.max_allocated = s.pool_max_allocated;
  p.max_reserved = s.pool_max_reserved;
  p.pending_frees = s.pending_frees;
  p.pending_bytes = s.pending_bytes;
  return p;
}

OomEntry oom_entry(const blocks::Oom& oom, const StringTable& strings) {
  OomEntry e;
  e.ts_ns = oom.ts_ns;
  e.tid = oom.tid;
  e.api = strings.get(oom.name);
  e.requested_bytes = clamp_to_int64(oom.requested_bytes);
  e.stream = oom.stream;
  e.stack_python = strings.get(oom.stack_python);
  e.stack_c = strings.get(oom.stack_c);
  e.refusals = oom.refusals;
  e.last_ts_ns = oom.last_ts_ns;
  for (const blocks::OomBlock& b : oom.top) {
    e.top.push_back({b.addr, clamp_to_int64(b.size_bytes), b.allocation_id, strings.get(b.owner),
                     strings.get(b.name), strings.get(b.stack_python), strings.get(b.stack_c)});
  }
  return e;
}

void add_scopes(const char* kind, const std::vector<blocks::ScopeEntry>& in, size_t top,
                std::vector<ScopeEntry>* out) {
  for (size_t i = 0; i < in.size() && i < top; ++i) {
    const blocks::ScopeEntry& s = in[i];
    out->push_back({kind, s.name, s.occurrences, clamp_to_int64(s.inclusive_bytes),
                    clamp_to_int64(s.exclusive_bytes), clamp_to_int64(s.peak_bytes)});
  }
}

}  // namespace

struct Analyzer::Impl {
  const StringTable* strings;
  AnalyzerOptions options;
  timeline::Timeline timeline;
  blocks::BlockAnalyzer blocks;
  StepMarks step_marks;
  uint64_t events = 0;
  int64_t first_ts_ns = kUnknown;  // the session's first event (DeviceReport::origin_ns)

  Impl(const StringTable* s, AnalyzerOptions o)
      : strings(s), options(o), blocks(*s, block_options(o)), step_marks(s) {
    if (o.capacity_bytes != kUnknown) timeline.set_capacity_for_all(o.capacity_bytes);
  }

  DeviceReport device_report(uint32_t pid, int32_t device) const;
};

DeviceReport Analyzer::device_report(uint32_t pid, int32_t device) const {
  return impl_->device_report(pid, device);
}

DeviceReport Analyzer::Impl::device_report(uint32_t pid, int32_t device) const {
  DeviceReport d;
  d.pid = pid;
  d.device = device;
  const timeline::ScopeSummary s = timeline.summary(pid, device);
  d.start_ns = s.first_ts_ns;
  d.end_ns = s.last_ts_ns;
  d.origin_ns = first_ts_ns != kUnknown ? first_ts_ns : s.first_ts_ns;
  d.allocations = s.mallocs;
  d.frees = s.frees;
  for (timeline::Curve c : {timeline::Curve::kAllocated, timeline::Curve::kReserved,
                            timeline::Curve::kActive, timeline::Curve::kAppReserved}) {
    CurveSummary curve;
    curve.name = timeline::curve_name(c);
    if (s.events != 0) {
      curve.peak_ns = s.peak[size_t(c)].ts_ns;
      curve.peak_bytes = s.peak[size_t(c)].value_bytes;
      curve.final_bytes = s.final_bytes[size_t(c)];
    }
    d.curves.push_back(curve);
  }
  d.layers = layers(timeline, pid, device);
  d.pool = pool_section(d, s);
  const bool pool_blocks = d.pool.source == "blocks";
  if (pool_blocks) d.allocations = d.frees = 0;
  for (const blocks::LayerTotals& layer : blocks.lifetimes(pid, device).layers) {
    const int64_t bytes = clamp_to_int64(layer.alloc_bytes);
    if (!pool_blocks) {
      d.bytes_allocated = saturating_add(d.bytes_allocated, bytes);
    } else if (layer.layer == Layer::kPta) {
      d.allocations += layer.allocs;
      d.frees += layer.frees;
      d.bytes_allocated = saturating_add(d.bytes_allocated, bytes);
    } else {
      d.driver_allocations += layer.allocs;
      d.driver_bytes_allocated = saturating_add(d.driver_bytes_allocated, bytes);
    }
  }

  const blocks::PeakResult peak = blocks.peak(pid, device);
  if (peak.found) {
    d.peak.ts_ns = known_time(peak.ts_ns);
    d.peak.bytes = clamp_to_int64(peak.bytes);
    d.peak.by_owner = breakdown(peak.by_owner);
    d.peak.by_stack = breakdown(peak.by_stack);
    d.peak.by_name = breakdown(peak.by_name);
  }

  const blocks::LeakResult leaks = blocks.leaks(pid, device);
  d.leaks.steps = leaks.step_based ? int64_t(leaks.steps) : 0;
  add_suspects("owner", leaks.owner_suspects, leaks.last_step_ns, &d.leaks.suspects);
  add_suspects("stack", leaks.stack_suspects, leaks.last_step_ns, &d.leaks.suspects);
  d.leaks.alive_at_end = alive(leaks.alive_by_stack, leaks.alive_bytes);
  d.leaks.alive_at_end_by_owner = alive(leaks.alive_by_owner, leaks.alive_bytes);
  d.leaks.alive_at_end_by_name = alive(leaks.alive_by_name, leaks.alive_bytes);
  d.leaks.trend_bytes_per_s = leaks.trend_bytes_per_s;
  d.leaks.live_bytes_per_step = leaks.live_bytes_per_step;
  for (const blocks::StepFigures& f : leaks.step_figures) {
    d.step_figures.push_back({int64_t(f.step), known_time(f.start_ns),
                              clamp_to_int64(f.start_bytes), clamp_to_int64(f.peak_bytes),
                              clamp_to_int64(f.end_bytes)});
  }

  // When the curves stood furthest apart as memory was asked for comes from the timeline;
  // the largest free gap, where segments are known, from the pool at its own worst moment
  // (report.h says both).
  if (s.fragmentation.worst_ts_ns != kUnknown) {
    d.fragmentation.worst_ns = s.fragmentation.worst_ts_ns;
    d.fragmentation.reserved = s.fragmentation.worst_reserved_bytes;
    d.fragmentation.allocated = s.fragmentation.worst_allocated_bytes;
    d.fragmentation.final_gap = s.fragmentation.final_gap_bytes;
    const blocks::FragmentationResult pool = blocks.fragmentation(pid, device);
    if (pool.worst.found && pool.worst.largest_free_gap >= 0) {
      d.fragmentation.largest_free_gap = pool.worst.largest_free_gap;
      d.fragmentation.largest_free_gap_ns = pool.worst.ts_ns;
    }
  }

  const blocks::InefficiencyResult in = blocks.inefficient_blocks(pid, device);
  d.inefficient.has_usage_events = !in.no_use_events;
  d.inefficient.lazy_used = int64_t(in.lazy_used.blocks);
  d.inefficient.lazy_used_bytes = clamp_to_int64(in.lazy_used.bytes);
  d.inefficient.delayed_free = int64_t(in.delayed_free.blocks);
  d.inefficient.delayed_free_bytes = clamp_to_int64(in.delayed_free.bytes);
  d.inefficient.long_idle = int64_t(in.long_idle.blocks);
  d.inefficient.long_idle_bytes = clamp_to_int64(in.long_idle.bytes);
  add_category("lazy_used", in.lazy_used, options.top_entries, &d.inefficient.top);
  add_category("delayed_free", in.delayed_free, options.top_entries, &d.inefficient.top);
  add_category("long_idle", in.long_idle, options.top_entries, &d.inefficient.top);

  const blocks::ScopeResult scopes = blocks.scopes(pid, device);
  add_scopes("owner", scopes.owners, options.top_entries, &d.scopes);
  add_scopes("operator", scopes.operators, options.top_entries, &d.scopes);
  add_scopes("range", scopes.ranges, options.top_entries, &d.scopes);

  const timeline::OomForecast oom = timeline.time_to_oom(pid, device);
  d.oom.sustained_growth = oom.status == timeline::OomStatus::kForecast ||
                           oom.status == timeline::OomStatus::kNoCapacity ||
                           oom.status == timeline::OomStatus::kTooEarly;
  d.oom.growth_bytes_per_s = oom.slope_bytes_per_s;
  d.oom.capacity_bytes = oom.capacity_bytes;
  if (oom.status == timeline::OomStatus::kForecast) d.oom.seconds_to_oom = oom.seconds_to_oom;
  if (oom.status == timeline::OomStatus::kTooEarly) {
    d.oom.too_early = true;
    d.oom.seconds_at_rate = oom.seconds_at_rate;
  }

  const blocks::OomResult ooms = blocks.ooms(pid, device);
  d.oom_count = ooms.count;
  for (const blocks::Oom& o : ooms.kept) d.ooms.push_back(oom_entry(o, *strings));
  return d;
}

Analyzer::Analyzer(const StringTable* strings, AnalyzerOptions options)
    : impl_(std::make_unique<Impl>(strings, options)) {}

Analyzer::~Analyzer() = default;

void Analyzer::add(const MemEvent* events, size_t count) {
  // The two analyses share nothing: on a large batch (a report or replay of a file) they
  // run side by side; small live batches are not worth a thread.
  constexpr size_t kParallelBatch = 65536;
  if (count >= kParallelBatch) {
    std::thread timeline([&] { impl_->timeline.add(events, count); });
    impl_->blocks.add(events, count);
    timeline.join();
  } else {
    impl_->timeline.add(events, count);
    impl_->blocks.add(events, count);
  }
  for (size_t i = 0; i < count; ++i) impl_->step_marks.add(events[i]);
  impl_->events += count;
  // Events come in time order, so a batch's first is its oldest.
  if (count != 0 && (impl_->first_ts_ns == kUnknown || events[0].ts_ns < impl_->first_ts_ns))
    impl_->first_ts_ns = events[0].ts_ns;
}

uint64_t Analyzer::events() const {
  return impl_->events;
}

const timeline::Timeline& Analyzer::timeline() const {
  return impl_->timeline;
}

const blocks::BlockAnalyzer& Analyzer::blocks() const {
  return impl_->blocks;
}

const StepMarks& Analyzer::step_marks() const {
  return impl_->step_marks;
}

Report Analyzer::report(const std::vector<RecordedProcess>& processes) const {
  Report r;
  r.events = impl_->events;
  r.processes = processes;
  std::sort(r.processes.begin(), r.processes.end(),
            [](const RecordedProcess& a, const RecordedProcess& b) { return a.pid < b.pid; });
  std::vector<timeline::ScopeId> scopes = impl_->timeline.scopes();
  // A device whose first allocation already failed has an OOM and no curves: listed too.
  for (const blocks::DeviceKey& k : impl_->blocks.oom_devices()) {
    const bool listed = std::any_of(scopes.begin(), scopes.end(), [&](const timeline::ScopeId& s) {
      return s.pid == k.pid && s.device == k.device;
    });
    if (!listed) scopes.push_back({k.pid, k.device});
  }
  std::sort(scopes.begin(), scopes.end(),
            [](const timeline::ScopeId& a, const timeline::ScopeId& b) {
              return a.pid != b.pid ? a.pid < b.pid : a.device < b.device;
            });
  for (const timeline::ScopeId& s : scopes) {
    r.devices.push_back(impl_->device_report(s.pid, s.device));
  }
  return r;
}

}  // namespace memtap
