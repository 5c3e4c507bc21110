// BlockAnalyzer, query side: each analysis' result for one (process, device), built from
// the state that ingest keeps (block_analyzer.cpp).
#include <algorithm>

#include "monitor/engine/blocks/analyzer_state.h"
#include "monitor/engine/blocks/pool_current.h"

namespace memtap::blocks {
namespace {

template <class R>
R empty_result(uint32_t pid, int32_t device) {
  R r;
  r.pid = pid;
  r.device = device;
  r.basis = device == kHostDevice ? Basis::kHostHeap : Basis::kAllLayers;
  return r;
}

std::vector<LifetimeEntry> lifetime_entries(const std::vector<FinishedFigures>& v,
                                            const KeyIndex& keys, const StringTable& strings,
                                            Dim dim, size_t top_n) {
  std::vector<uint32_t> order;
  for (uint32_t k = 0; k < v.size(); ++k)
    if (v[k].blocks != 0) order.push_back(k);
  const size_t n = std::min(top_n, order.size());
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](uint32_t a, uint32_t b) {
    if (v[a].bytes != v[b].bytes) return v[a].bytes > v[b].bytes;
    return keys.string_id(dim, a) < keys.string_id(dim, b);
  });
  std::vector<LifetimeEntry> out;
  for (size_t i = 0; i < n; ++i) {
    const FinishedFigures& f = v[order[i]];
    out.push_back({label_of(keys, strings, dim, order[i]), f.blocks, f.bytes,
                   double(f.lifetime_sum_ns) / double(f.blocks), f.max_lifetime_ns});
  }
  return out;
}

}  // namespace

uint64_t BlockAnalyzer::events() const {
  return s_->seq;
}

int64_t BlockAnalyzer::now_ns() const {
  return s_->now_ns;
}

std::vector<DeviceKey> BlockAnalyzer::devices() const {
  std::vector<DeviceKey> out;
  for (const auto& d : s_->devices) out.push_back({d->pid, d->device});
  return out;
}

std::vector<DeviceKey> BlockAnalyzer::oom_devices() const {
  std::vector<DeviceKey> out;
  for (const auto& [pid, device] : s_->ooms.devices()) out.push_back({pid, device});
  return out;
}

OomResult BlockAnalyzer::ooms(uint32_t pid, int32_t device) const {
  return s_->ooms.result(pid, device);
}

Basis BlockAnalyzer::basis(uint32_t pid, int32_t device) const {
  const DeviceState* d = s_->find_device(pid, device);
  if (d) return d->basis();
  return device == kHostDevice ? Basis::kHostHeap : Basis::kAllLayers;
}

PeakResult BlockAnalyzer::peak(uint32_t pid, int32_t device) const {
  const DeviceState* d = s_->find_device(pid, device);
  if (!d) return empty_result<PeakResult>(pid, device);
  PeakResult r =
      peak_result(d->accounts[d->basis_account()].live, d->keys, s_->strings, s_->options.top_n);
  r.pid = pid;
  r.device = device;
  r.basis = d->basis();
  return r;
}

LeakResult BlockAnalyzer::leaks(uint32_t pid, int32_t device) const {
  const DeviceState* d = s_->find_device(pid, device);
  if (!d) return empty_result<LeakResult>(pid, device);
  const Account& a = d->accounts[d->basis_account()];
  LeakResult r = leak_result(a.steps, a.live, a.trend, d->keys, s_->strings, s_->options.leaks,
                             s_->options.top_n, s_->now_ns);
  r.pid = pid;
  r.device = device;
  r.basis = d->basis();
  return r;
}

std::vector<StepFigures> BlockAnalyzer::step_figures(uint32_t pid, int32_t device, int64_t t0_ns,
                                                     int64_t t1_ns) const {
  const DeviceState* d = s_->find_device(pid, device);
  if (!d) return {};
  const Account& a = d->accounts[d->basis_account()];
  return step_figures_between(a.steps, a.live, t0_ns, t1_ns);
}

PoolState BlockAnalyzer::pool_state(uint32_t pid, int32_t device, bool with_blocks) const {
  const DeviceState* d = s_->find_device(pid, device);
  PoolState s;
  if (d) s = current_pool(*d, with_blocks);
  s.pid = pid;
  s.device = device;
  s.ts_ns = s_->now_ns;
  return s;
}

FragmentationResult BlockAnalyzer::fragmentation(uint32_t pid, int32_t device) const {
  FragmentationResult r;
  r.pid = pid;
  r.device = device;
  const DeviceState* d = s_->find_device(pid, device);
  if (!d) return r;
  PoolState now = current_pool(*d, false);
  now.ts_ns = s_->now_ns;
  r.source = now.source;
  r.now = moment_of(now);
  // The present counts among the moments seen, without changing the tracker; it asks for
  // nothing, so it is never the worst (a finished program's pool, every block freed and
  // every segment kept, would always be).
  FragmentationTracker t = d->fragmentation;
  consider_moment(t, r.now, false);
  r.evaluations = t.evaluations;
  r.skipped_evaluations = t.skipped;
  r.worst = t.worst;
  // No moment that asked for memory was looked at with its blocks in place (the looks are
  // amortised over the pool's events: a snapshot's blocks before its trace all come at
  // once, and none came due): the present's gaps are the ones known, and the report says
  // when they were measured.
  // So too when the moments looked at found no free byte: the gaps came after them.
  if ((!r.worst.found || r.worst.free_bytes == 0) && r.now.found && r.now.largest_free_gap >= 0) {
    r.worst = r.now;
  }
  r.most_free = t.most_free;
  return r;
}

InefficiencyResult BlockAnalyzer::inefficient_blocks(uint32_t pid, int32_t device) const {
  const DeviceState* d = s_->find_device(pid, device);
  if (!d) return empty_result<InefficiencyResult>(pid, device);
  const ProcessState& p = *s_->processes[d->process];
  const uint8_t account = d->basis_account();
  const Account& a = d->accounts[account];
  InefficiencyResult r;
  r.pid = pid;
  r.device = device;
  r.basis = d->basis();
  r.source = p.access_events ? UseSource::kAccess
             : p.op_events   ? UseSource::kOperators
                             : UseSource::kNone;
  r.no_use_events = r.source == UseSource::kNone;
  if (r.no_use_events) return r;
  InefficiencyTally t = r.source == UseSource::kAccess ? a.by_access : a.by_operators;
  // Blocks still live are judged as of now, on a copy: their figures may change later.
  const InefficiencyOptions& o = s_->options.inefficiency;
  for (const LayerState& layer : d->layers)
    layer.table.for_each([&](uint64_t addr, const LiveBlock& b, const BlockUses& u) {
      if (b.account != account) return;
      const JudgedBlock j = judged_block(*d, addr, b, u);
      if (r.source == UseSource::kAccess)
        judge_by_access(t, j, s_->now_ns, false, o, s_->options.top_n);
      else
        judge_by_operators(t, j, s_->now_ns, false, o, s_->options.top_n);
    });
  fill_categories(r, t, s_->strings);
  return r;
}

ScopeResult BlockAnalyzer::scopes(uint32_t pid, int32_t device) const {
  const DeviceState* d = s_->find_device(pid, device);
  if (!d) return empty_result<ScopeResult>(pid, device);
  const ProcessState& p = *s_->processes[d->process];
  const uint8_t account = d->basis_account();
  const Account& a = d->accounts[account];
  ScopeResult r;
  r.pid = pid;
  r.device = device;
  r.basis = d->basis();
  for (uint32_t i = 0; i < a.owner_scopes.size(); ++i) {
    const OwnerScopeFigures& f = a.owner_scopes[i];
    if (f.inclusive_blocks == 0) continue;
    ScopeEntry e;
    e.kind = ScopeKind::kOwner;
    e.name = s_->owner_prefixes.names[i];
    e.inclusive_bytes = f.inclusive_bytes;
    e.inclusive_blocks = f.inclusive_blocks;
    e.exclusive_bytes = f.exclusive_bytes;
    e.exclusive_blocks = f.exclusive_blocks;
    e.peak_bytes = f.peak_inclusive;
    e.peak_ts_ns = f.peak_ts_ns;
    e.exclusive_peak_bytes = f.peak_exclusive;
    e.live_bytes = f.live_inclusive;
    r.owners.push_back(std::move(e));
  }
  std::sort(r.owners.begin(), r.owners.end(),
            [](const ScopeEntry& x, const ScopeEntry& y) { return x.name < y.name; });
  r.operators =
      scope_entries(p.operators, d->account_id(account), ScopeKind::kOperator, s_->strings);
  r.ranges = scope_entries(p.range_names, d->account_id(account), ScopeKind::kRange, s_->strings);
  for (const ThreadState& th : p.threads) r.open_operators += th.ops.size();
  r.open_ranges = p.ranges.size();
  r.unmatched_ends = p.unmatched_ends;
  return r;
}

LifetimeResult BlockAnalyzer::lifetimes(uint32_t pid, int32_t device) const {
  const DeviceState* d = s_->find_device(pid, device);
  if (!d) return empty_result<LifetimeResult>(pid, device);
  LifetimeResult r;
  r.pid = pid;
  r.device = device;
  r.basis = d->basis();
  for (int slot = 0; slot < kLayerSlots; ++slot) {
    if (!d->layers[slot].seen) continue;
    LayerTotals t = d->layers[slot].totals;
    t.layer = slot == kMmapSlot ? Layer::kHost : Layer(slot);
    t.is_mmap = slot == kMmapSlot;
    r.layers.push_back(t);
  }
  const Account& a = d->accounts[d->basis_account()];
  const size_t n = s_->options.top_n;
  r.by_owner = lifetime_entries(a.finished[kByOwner], d->keys, s_->strings, kByOwner, n);
  r.by_stack = lifetime_entries(a.finished[kByStack], d->keys, s_->strings, kByStack, n);
  r.by_name = lifetime_entries(a.finished[kByName], d->keys, s_->strings, kByName, n);
  return r;
}

PoolState replay_pool_state(const MemEvent* events, size_t n, const StringTable& strings,
                            uint32_t pid, int32_t device, int64_t t_ns, bool with_blocks) {
  const MemEvent* end = std::upper_bound(events, events + n, t_ns,
                                         [](int64_t t, const MemEvent& e) { return t < e.ts_ns; });
  BlockAnalyzer a(strings);
  a.add(events, size_t(end - events));
  PoolState s = a.pool_state(pid, device, with_blocks);
  s.ts_ns = t_ns;
  return s;
}

}  // namespace memtap::blocks
