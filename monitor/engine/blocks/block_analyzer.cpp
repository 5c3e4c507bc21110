// BlockAnalyzer, ingest side: each event goes to its (process, device, layer) and to the
// analyses that count it. The queries are in block_queries.cpp.
#include <algorithm>

#include "monitor/engine/blocks/analyzer_state.h"
#include "monitor/engine/blocks/pool_current.h"
#include "monitor/engine/saturating.h"

namespace memtap::blocks {
namespace {

ProcessState& process_of(AnalyzerState& s, uint32_t pid) {
  uint32_t i = s.process_index.find(pid);
  if (i == FlatIndex::kNone) {
    i = uint32_t(s.processes.size());
    s.processes.push_back(std::make_unique<ProcessState>());
    s.processes.back()->pid = pid;
    s.process_index.insert(pid, i);
  }
  return *s.processes[i];
}

DeviceState& device_of(AnalyzerState& s, uint32_t pid, int32_t device) {
  const uint64_t key = AnalyzerState::device_key(pid, device);
  if (DeviceState* last = s.last_device_if(key)) return *last;
  uint32_t i = s.device_index.find(key);
  if (i == FlatIndex::kNone) {
    ProcessState& p = process_of(s, pid);
    i = uint32_t(s.devices.size());
    auto d = std::make_unique<DeviceState>();
    d->pid = pid;
    d->device = device;
    d->index = i;
    d->process = s.process_index.find(pid);
    for (Account& a : d->accounts) {
      a.steps.window = std::max<size_t>(s.options.leaks.window_steps, 1);
      // A device first seen during a step had nothing live at that step's start.
      if (p.steps) record_step_boundary(a.steps, a.live, p.steps, p.step_ts_ns);
    }
    s.devices.push_back(std::move(d));
    s.device_index.insert(key, i);
    p.devices.push_back(i);
  }
  s.last_device_key = key;
  s.last_device = s.devices[i].get();
  return *s.last_device;
}

ThreadState* find_thread(ProcessState& p, uint32_t tid) {
  const uint32_t i = p.thread_index.find(tid);
  return i == FlatIndex::kNone ? nullptr : &p.threads[i];
}

ThreadState& thread_of(ProcessState& p, uint32_t tid) {
  uint32_t i = p.thread_index.find(tid);
  if (i == FlatIndex::kNone) {
    i = uint32_t(p.threads.size());
    p.threads.emplace_back();
    p.thread_index.insert(tid, i);
  }
  return p.threads[i];
}

// Layers whose events change the pool's state (pool_current.h).
bool is_pool_slot(const DeviceState& d, uint8_t slot) {
  if (d.is_host()) return slot == kMmapSlot || slot == uint8_t(Layer::kHost);
  return slot == uint8_t(Layer::kHal) || slot == uint8_t(Layer::kPta);
}

bool is_segment_change(const DeviceState& d, const MemEvent& e, uint8_t slot) {
  if (d.is_host()) return slot == kMmapSlot;
  if (slot == uint8_t(Layer::kHal)) return true;
  return e.layer == Layer::kPta && e.pool_total >= 0 && e.pool_total != d.pool_total;
}

// A pending block still there where the pool hands out a new block, or frees one again:
// its completion was lost (the pool reuses no memory another stream may still use).
void drop_pending(DeviceState& d, uint64_t addr) {
  PendingBlock lost;
  if (!d.pending.empty()) d.pending.take(addr, &lost);
}

// asked: the moment memory is asked for (the pool is about to grow, a step begins), which
// alone may be the worst (pool_state.h); a segment given back is not.
void evaluate_fragmentation(AnalyzerState& s, DeviceState& d, int64_t ts_ns, bool asked) {
  if (!d.is_host() && !d.pta_seen) return;  // no pool yet
  FragmentationTracker& f = d.fragmentation;
  const uint64_t live = pool_live_blocks(d);
  if (f.pool_events_since * s.options.fragmentation_amortization < live) {
    ++f.skipped;
    return;
  }
  PoolState ps = current_pool(d, false);
  ps.ts_ns = ts_ns;
  ++f.evaluations;
  f.pool_events_since = 0;
  consider_moment(f, moment_of(ps), asked);
}

// A block allocated inside an operator or range: its uses, with what its end needs to
// find the scopes that contain it.
uint32_t scope_uses(const AnalyzerState& s, BlockTable& table, uint32_t block_slot,
                    const MemEvent& e) {
  const uint32_t i = table.uses_of(block_slot);
  table.uses_at(i).alloc_seq = s.seq;
  table.uses_at(i).tid = e.tid;
  return i;
}

// Everything a block's end changes; the block has left its table already.
void release(AnalyzerState& s, DeviceState& d, uint8_t slot, uint64_t addr, const LiveBlock& b,
             const BlockUses& u, int64_t end_ns) {
  LayerTotals& t = d.layers[slot].totals;
  ++t.frees;
  t.freed_bytes = saturating_add(t.freed_bytes, b.size_bytes);
  t.live_bytes = saturating_sub(t.live_bytes, b.size_bytes);
  --t.live_blocks;
  const int64_t lifetime = saturating_sub(end_ns, b.alloc_ts_ns);
  const int bucket = lifetime_bucket(lifetime);
  ++t.lifetimes.blocks[bucket];
  t.lifetimes.bytes[bucket] = saturating_add(t.lifetimes.bytes[bucket], b.size_bytes);
  if (b.account == kNoAccount) return;

  Account& a = d.accounts[b.account];
  const BlockKeys keys{b.owner_key, b.stack_key, b.name_key,
                       d.keys.key(kByOwnerStack, pair_tag(b.owner_key, b.stack_key))};
  live_remove(a.live, keys, b.size_bytes);
  trend_update(a.trend, end_ns, double(a.live.live_bytes));
  add_finished(a.finished, keys, b.size_bytes, lifetime);
  owner_scopes_remove(a.owner_scopes, s.owner_prefixes, d.owner_prefix_list[b.owner_key],
                      b.size_bytes);
  ProcessState& p = *s.processes[d.process];
  const uint32_t account = d.account_id(b.account);
  // Open occurrences that started before the block was allocated contain it (scopes.h).
  if (u.in_op)
    if (ThreadState* th = find_thread(p, u.tid))
      for (OpenScope& o : th->ops) {
        if (o.start_seq >= u.alloc_seq) break;
        scope_free(o, account, b.size_bytes);
      }
  if (u.in_range)
    for (OpenScope& r : p.ranges) {
      if (r.start_seq >= u.alloc_seq) break;
      scope_free(r, account, b.size_bytes);
    }
  // Before a process's first ACCESS event its blocks say nothing about uses: judging them
  // would report every one as never used.
  if (p.access_events == 0 && !u.in_op) return;
  const size_t top_n = s.options.top_n;
  const JudgedBlock j = judged_block(d, addr, b, u);
  if (p.access_events != 0)
    judge_by_access(a.by_access, j, end_ns, true, s.options.inefficiency, top_n);
  if (u.in_op) judge_by_operators(a.by_operators, j, end_ns, true, s.options.inefficiency, top_n);
}

void on_malloc(AnalyzerState& s, const MemEvent& e) {
  DeviceState& d = device_of(s, e.pid, e.device);
  const uint8_t slot = layer_slot(e.layer, e.is_mmap);
  // Fragmentation is sampled just before the pool changes shape (pool_state.h).
  if (is_segment_change(d, e, slot)) {
    // A PTA block whose Attr total moved says the pool grew or shrank before it.
    evaluate_fragmentation(s, d, e.ts_ns, e.layer != Layer::kPta || e.pool_total > d.pool_total);
  }
  if (is_pool_slot(d, slot)) ++d.fragmentation.pool_events_since;
  if (e.layer == Layer::kPta) {
    d.pta_seen = true;
    if (e.pool_total >= 0) d.pool_total = e.pool_total;
    drop_pending(d, e.addr);
  }
  LayerState& layer = d.layers[slot];
  layer.seen = true;
  if (layer.table.find(e.addr) != FlatIndex::kNone) {
    LiveBlock old;
    BlockUses old_uses;
    layer.table.erase(e.addr, &old, &old_uses);
    ++layer.totals.replaced_blocks;
    release(s, d, slot, e.addr, old, old_uses, e.ts_ns);
  }
  ProcessState& p = *s.processes[d.process];
  ThreadState* th = p.threads.empty() ? nullptr : find_thread(p, e.tid);
  const uint32_t block_slot = layer.table.insert(e.addr);
  LiveBlock& b = layer.table.at(block_slot);
  b.size_bytes = e.size_bytes;
  b.alloc_ts_ns = e.ts_ns;
  b.allocation_id = e.allocation_id;
  b.owner_key = d.keys.key(kByOwner, owner_tag(e.owner));
  b.stack_key = d.keys.key(kByStack, stack_key_of(e));
  // A block that names no operator of its own (msMemScope's PTA rows say N/A) is named for
  // the innermost operator running on its thread: who allocated it, as memtap.torch's
  // blocks name it, so breakdowns and diffs by name say which operator holds what.
  const uint32_t name = e.name == 0 && th && !th->ops.empty() ? th->ops.back().name : e.name;
  b.name_key = d.keys.key(kByName, name_tag(name));
  b.mapping = e.layer == Layer::kHal && e.name != 0 && is_mapping_api(s.strings.get(e.name));
  if (b.owner_key == d.owner_prefix_list.size())
    d.owner_prefix_list.push_back(owner_prefix_list(s.owner_prefixes, s.strings, e.owner));

  LayerTotals& t = layer.totals;
  ++t.allocs;
  t.alloc_bytes = saturating_add(t.alloc_bytes, e.size_bytes);
  t.live_bytes = saturating_add(t.live_bytes, e.size_bytes);
  ++t.live_blocks;
  if (t.live_bytes > t.peak_live_bytes || t.peak_ts_ns == kNoTime) {
    t.peak_live_bytes = t.live_bytes;
    t.peak_ts_ns = e.ts_ns;
  }

  b.account = account_of(e.device, e.layer, e.is_mmap);
  if (b.account == kNoAccount) return;
  Account& a = d.accounts[b.account];
  // The pair key is looked up again at the block's end rather than kept in every LiveBlock.
  const uint32_t pair_key = d.keys.key(kByOwnerStack, pair_tag(b.owner_key, b.stack_key));
  live_add(a.live, {b.owner_key, b.stack_key, b.name_key, pair_key}, e.size_bytes, e.ts_ns);
  trend_update(a.trend, e.ts_ns, double(a.live.live_bytes));
  owner_scopes_add(a.owner_scopes, s.owner_prefixes, d.owner_prefix_list[b.owner_key], e.size_bytes,
                   e.ts_ns);

  const uint32_t account = d.account_id(b.account);
  if (th && !th->ops.empty()) {
    const uint32_t uses = scope_uses(s, layer.table, block_slot, e);
    layer.table.uses_at(uses).in_op = true;
    for (size_t i = 0; i < th->ops.size(); ++i)
      scope_alloc(th->ops[i], account, e.size_bytes, i + 1 == th->ops.size());
    OpenScope& outermost = th->ops.front();
    if (outermost.blocks.size() < kMaxScopeBlocks)
      outermost.blocks.push_back({d.index, uses, layer.table.uses_at(uses).generation, slot});
  }
  if (!p.ranges.empty()) {
    layer.table.uses_at(scope_uses(s, layer.table, block_slot, e)).in_range = true;
    for (size_t i = 0; i < p.ranges.size(); ++i)
      scope_alloc(p.ranges[i], account, e.size_bytes, i + 1 == p.ranges.size());
  }
}

void on_free(AnalyzerState& s, const MemEvent& e) {
  DeviceState& d = device_of(s, e.pid, e.device);
  const uint8_t slot = layer_slot(e.layer, e.is_mmap);
  if (is_segment_change(d, e, slot)) {
    evaluate_fragmentation(s, d, e.ts_ns, e.layer == Layer::kPta && e.pool_total > d.pool_total);
  }
  if (is_pool_slot(d, slot)) ++d.fragmentation.pool_events_since;
  if (e.layer == Layer::kPta && e.pool_total >= 0) d.pool_total = e.pool_total;
  LayerState& layer = d.layers[slot];
  layer.seen = true;
  LiveBlock b;
  BlockUses u;
  if (!layer.table.erase(e.addr, &b, &u)) {
    ++layer.totals.unmatched_frees;
    return;
  }
  // Its lifetime ends here, pending or not: Allocated counts what the program holds, and
  // the program let go of it (pool_state.h keeps it in its segment until it completes).
  release(s, d, slot, e.addr, b, u, e.ts_ns);
  if (slot == uint8_t(Layer::kPta)) {
    drop_pending(d, e.addr);
    if (e.free_pending) {
      b.account = kNoAccount;
      b.has_uses = false;
      d.pending.put(e.addr, {b, e.ts_ns});
    }
  }
}

// FREE_COMPLETED: the pool took a pending block back; its bytes are free in its segment.
// One with no pending block changes nothing (the timeline counts it).
void on_free_completed(AnalyzerState& s, const MemEvent& e) {
  if (e.layer != Layer::kPta) return;
  DeviceState& d = device_of(s, e.pid, e.device);
  PendingBlock done;
  if (d.pending.empty() || !d.pending.take(e.addr, &done)) return;
  ++d.fragmentation.pool_events_since;
}

// A device pool's SNAPSHOT: its reserved is the pool's total from now on, as a PTA event's
// Attr total (curve_rules.h); a new total is a segment change.
void on_pool_snapshot(AnalyzerState& s, const MemEvent& e) {
  DeviceState& d = device_of(s, e.pid, e.device);
  // Per component, as the curves add them up (pool_samples.h).
  int64_t allocated = kUnknown, reserved = kUnknown;
  d.pool_samples.add(e, &allocated, &reserved);
  if (reserved < 0 || reserved == d.pool_total) return;
  evaluate_fragmentation(s, d, e.ts_ns, reserved > d.pool_total);
  d.pool_total = reserved;
}

// The uses of the block an ACCESS names (its start address, in the framework pool first),
// made on its first ACCESS; null when no block starts there.
BlockUses* accessed_block(AnalyzerState& s, const ProcessState& p, const MemEvent& e) {
  static constexpr uint8_t kOrder[] = {
      uint8_t(Layer::kPta),        uint8_t(Layer::kHost),      uint8_t(Layer::kPtaWorkspace),
      uint8_t(Layer::kAtb),        uint8_t(Layer::kMindspore), uint8_t(Layer::kHal),
      uint8_t(Layer::kHostPinned), uint8_t(Layer::kOther),     kMmapSlot};
  for (uint32_t i : p.devices) {
    DeviceState& d = *s.devices[i];
    if (e.device != kNoDevice && d.device != e.device) continue;
    for (uint8_t slot : kOrder) {
      BlockTable& table = d.layers[slot].table;
      const uint32_t block_slot = table.find(e.addr);
      if (block_slot != FlatIndex::kNone) return &table.uses_at(table.uses_of(block_slot));
    }
  }
  return nullptr;
}

void on_access(AnalyzerState& s, const MemEvent& e) {
  ProcessState& p = process_of(s, e.pid);
  ++p.access_events;
  BlockUses* b = accessed_block(s, p, e);
  if (!b) return;
  if (b->uses == 0) {
    b->first_use_ns = e.ts_ns;
  } else if (e.ts_ns - b->last_use_ns > b->max_idle_ns) {
    b->max_idle_ns = e.ts_ns - b->last_use_ns;
    b->max_idle_start_ns = b->last_use_ns;
  }
  b->last_use_ns = e.ts_ns;
  ++b->uses;
}

void close_operator(AnalyzerState& s, ProcessState& p, ThreadState& th, size_t i, int64_t ts_ns) {
  OpenScope& o = th.ops[i];
  close_scope(p.operators, o);
  if (i != 0) return;
  for (const BlockRef& ref : o.blocks) {
    BlockUses& u = s.devices[ref.device]->layers[ref.layer_slot].table.uses_at(ref.uses);
    if (u.generation == ref.generation) u.op_last_use_ns = ts_ns;
  }
}

void on_op_start(AnalyzerState& s, const MemEvent& e) {
  ProcessState& p = process_of(s, e.pid);
  ++p.op_events;
  ThreadState& th = thread_of(p, e.tid);
  if (th.ops.size() >= kMaxOpenScopes) {
    ++th.dropped;
    return;
  }
  th.ops.push_back({});
  th.ops.back().name = e.name;
  th.ops.back().start_seq = s.seq;
  th.ops.back().start_ts_ns = e.ts_ns;
}

// An end closes the latest open operator of its name on the thread, and any operator
// opened inside it that never ended.
void on_op_end(AnalyzerState& s, const MemEvent& e) {
  ProcessState& p = process_of(s, e.pid);
  ++p.op_events;
  ThreadState* th = find_thread(p, e.tid);
  if (th && th->dropped) {
    --th->dropped;
    return;
  }
  size_t i = th ? th->ops.size() : 0;
  while (i > 0 && th->ops[i - 1].name != e.name) --i;
  if (i == 0) {
    ++p.unmatched_ends;
    return;
  }
  for (size_t j = th->ops.size(); j-- > i - 1;) close_operator(s, p, *th, j, e.ts_ns);
  th->ops.resize(i - 1);
}

void on_range_start(AnalyzerState& s, const MemEvent& e) {
  ProcessState& p = process_of(s, e.pid);
  if (p.ranges.size() >= kMaxOpenScopes) return;  // its end will count as unmatched
  p.ranges.push_back({});
  p.ranges.back().name = e.name;
  p.ranges.back().start_seq = s.seq;
  p.ranges.back().start_ts_ns = e.ts_ns;
}

// Ranges may overlap: an end closes only the latest open range of its name.
void on_range_end(AnalyzerState& s, const MemEvent& e) {
  ProcessState& p = process_of(s, e.pid);
  size_t i = p.ranges.size();
  while (i > 0 && p.ranges[i - 1].name != e.name) --i;
  if (i == 0) {
    ++p.unmatched_ends;
    return;
  }
  close_scope(p.range_names, p.ranges[i - 1]);
  p.ranges.erase(p.ranges.begin() + std::ptrdiff_t(i - 1));
}

void on_step(AnalyzerState& s, const MemEvent& e) {
  ProcessState& p = process_of(s, e.pid);
  ++p.steps;
  p.step_ts_ns = e.ts_ns;
  for (uint32_t i : p.devices) {
    DeviceState& d = *s.devices[i];
    for (Account& a : d.accounts) {
      record_step_boundary(a.steps, a.live, p.steps, e.ts_ns);
      a.live.step_peak_bytes = a.live.live_bytes;  // the new step's peak starts here
    }
    evaluate_fragmentation(s, d, e.ts_ns, true);
  }
}

}  // namespace

BlockAnalyzer::BlockAnalyzer(const StringTable& strings, BlockAnalyzerOptions options)
    : s_(std::make_unique<AnalyzerState>(strings, options)) {}

BlockAnalyzer::~BlockAnalyzer() = default;

namespace {

// The live-block table an allocation or free will look its address up in, or null.
const BlockTable* table_for(const AnalyzerState& s, const MemEvent& e) {
  if (e.kind != MemEventKind::kMalloc && e.kind != MemEventKind::kFree) return nullptr;
  const DeviceState* d = s.last_device_if(AnalyzerState::device_key(e.pid, e.device));
  if (d == nullptr) d = s.find_device(e.pid, e.device);
  return d ? &d->layers[layer_slot(e.layer, e.is_mmap)].table : nullptr;
}

}  // namespace

void BlockAnalyzer::add(const MemEvent* events, size_t n) {
  AnalyzerState& s = *s_;
  // Two stages ahead of the event being applied: its address's index slot, then its block.
  constexpr size_t kIndexAhead = 16, kBlockAhead = 8;
  for (size_t i = 0; i < n; ++i) {
    if (i + kIndexAhead < n) {
      if (const BlockTable* t = table_for(s, events[i + kIndexAhead]))
        t->prefetch_index(events[i + kIndexAhead].addr);
    }
    if (i + kBlockAhead < n && events[i + kBlockAhead].kind == MemEventKind::kFree) {
      if (const BlockTable* t = table_for(s, events[i + kBlockAhead]))
        t->prefetch_block(events[i + kBlockAhead].addr);
    }
    const MemEvent& e = events[i];
    ++s.seq;
    if (e.ts_ns > s.now_ns) s.now_ns = e.ts_ns;
    switch (e.kind) {
      case MemEventKind::kMalloc:
        on_malloc(s, e);
        break;
      case MemEventKind::kFree:
        on_free(s, e);
        break;
      case MemEventKind::kFreeCompleted:
        on_free_completed(s, e);
        break;
      case MemEventKind::kSnapshot:
        if (e.device >= 0 && e.layer == Layer::kPta) on_pool_snapshot(s, e);
        break;
      case MemEventKind::kAccess:
        on_access(s, e);
        break;
      case MemEventKind::kOpStart:
        on_op_start(s, e);
        break;
      case MemEventKind::kOpEnd:
        on_op_end(s, e);
        break;
      case MemEventKind::kRangeStart:
        on_range_start(s, e);
        break;
      case MemEventKind::kRangeEnd:
        on_range_end(s, e);
        break;
      case MemEventKind::kStep:
        on_step(s, e);
        break;
      case MemEventKind::kOom:
      case MemEventKind::kOomTopAlloc:
        s.ooms.add(e);
        break;
      default:
        break;  // marks, kernels, trace start/stop: other parts of the engine
    }
  }
}

}  // namespace memtap::blocks
