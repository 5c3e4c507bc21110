// See block_pairing.h.
#include "monitor/viewdata/block_pairing.h"

#include <algorithm>
#include <limits>

namespace memtap::viewdata {

uint8_t lifetime_level(int64_t lifetime_ns, int64_t promote_after_ns) {
  uint8_t level = 0;
  while (level < kMaxLevel && lifetime_ns > level_span_ns(level, promote_after_ns)) ++level;
  return level;
}

int64_t level_span_ns(uint8_t level, int64_t promote_after_ns) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (level >= 63 || promote_after_ns > (kMax >> level)) return kMax;
  return promote_after_ns << level;
}

void AllocSpans::add(int64_t id, int64_t alloc_ns) {
  last_id_ = id;
  const size_t run = size_t((id - 1) / kRun);
  if (run == run_min_.size()) {
    run_min_.push_back(alloc_ns);
    prefix_max_.push_back(prefix_max_.empty() ? alloc_ns : std::max(prefix_max_.back(), alloc_ns));
    return;
  }
  run_min_[run] = std::min(run_min_[run], alloc_ns);
  prefix_max_[run] = std::max(prefix_max_[run], alloc_ns);
}

int64_t AllocSpans::first_from(int64_t from_ns) const {
  // Runs before the first whose prefix max reaches from_ns allocated everything earlier.
  const auto first = std::lower_bound(prefix_max_.begin(), prefix_max_.end(), from_ns);
  if (first == prefix_max_.end()) return last_id_ + 1;
  return int64_t(first - prefix_max_.begin()) * kRun + 1;
}

int64_t AllocSpans::last_until(int64_t to_ns) const {
  // The last run with an allocation at or before to_ns; the runs are few (one per 1024 ids).
  size_t last = run_min_.size();
  while (last > 0 && run_min_[last - 1] > to_ns) --last;
  return std::min(int64_t(last) * kRun, last_id_);
}

BlockPairing::BlockPairing(int64_t promote_after_ns)
    : promote_after_ns_(std::max<int64_t>(promote_after_ns, 1)) {}

BlockPairing::Scope* BlockPairing::scope_of(uint32_t pid, int32_t device, bool make) {
  const uint64_t key = (uint64_t(pid) << 32) | uint32_t(device);
  // Any key is possible, the initial ~0 too (pid 4294967295 on the host).
  if (last_scope_ != nullptr && key == last_scope_key_) return last_scope_;
  const uint32_t* found = scope_index_.find(key);
  uint32_t i;
  if (found) {
    i = *found;
  } else {
    if (!make) return nullptr;
    i = uint32_t(scopes_.size());
    scopes_.push_back(std::make_unique<Scope>());
    scope_keys_.emplace_back(pid, device);
    scope_index_.put(key, i);
  }
  last_scope_key_ = key;
  last_scope_ = scopes_[i].get();
  return last_scope_;
}

bool BlockPairing::end_pending(Scope& scope, uint32_t pid, int32_t device, uint64_t addr,
                               int64_t done_ns, BlockSink& sink) {
  OpenPending p;
  if (scope.pending.empty() || !scope.pending.take(addr, &p)) return false;
  sink.store_pending({p.id, pid, device, p.free_ns, done_ns});
  return true;
}

void BlockPairing::add(const IndexEvent& e, BlockSink& sink) {
  if (!any_event_ || e.ts_ns > newest_ns_) newest_ns_ = e.ts_ns;
  any_event_ = true;
  const bool pool_block = e.slot == uint8_t(Layer::kPta);
  if (e.free_completed) {
    // One with no wait (its FREE was not pending, or came before the index) changes nothing.
    if (Scope* scope = scope_of(e.pid, e.device, false); scope && pool_block)
      end_pending(*scope, e.pid, e.device, e.addr, e.ts_ns, sink);
    return;
  }
  Scope* scope = scope_of(e.pid, e.device, !e.is_free);
  if (scope && pool_block) end_pending(*scope, e.pid, e.device, e.addr, e.ts_ns, sink);
  if (e.is_free) {
    LiveRef ref;
    if (!scope || !scope->live[e.slot].take(e.addr, &ref)) {
      ++unmatched_frees_;
    } else {
      close(ref, e.ts_ns, sink);
      if (pool_block && e.free_pending) {
        scope->pending.put(e.addr, {ref.id, e.ts_ns});
        ++pending_frees_;
      }
    }
  } else {
    FlatMap<LiveRef>& live = scope->live[e.slot];
    LiveRef old;
    if (live.take(e.addr, &old)) close(old, e.ts_ns, sink);  // a MALLOC over a live block
    StoredBlock b;
    b.id = ++last_id_;
    b.pid = e.pid;
    b.device = e.device;
    b.slot = e.slot;
    b.addr = e.addr;
    b.size_bytes = e.size_bytes;
    b.alloc_ns = e.ts_ns;
    b.tid = e.tid;
    b.allocation_id = e.allocation_id;
    b.owner = e.owner;
    b.name = e.name;
    b.stack_python = e.stack_python;
    b.stack_c = e.stack_c;
    young_.push_back({b, false});
    ++young_live_;
    ++young_version_;
    live.put(e.addr, {b.id, b.alloc_ns});
    spans_.add(b.id, b.alloc_ns);
  }
  advance(sink);
}

void BlockPairing::close(const LiveRef& ref, int64_t free_ns, BlockSink& sink) {
  if (ref.id >= head_id_) {
    young_[size_t(ref.id - head_id_)].block.free_ns = free_ns;
    --young_live_;
    ++young_version_;
    return;
  }
  const uint8_t level = lifetime_level(free_ns - ref.alloc_ns, promote_after_ns_);
  sink.close_stored(ref.id, free_ns, std::max<uint8_t>(level, 1));
}

void BlockPairing::advance(BlockSink& sink) {
  while (!young_.empty()) {
    Young& y = young_.front();
    StoredBlock& b = y.block;
    if (b.free_ns != kStillLive) {
      if (!y.stored) sink.store(b, lifetime_level(b.free_ns - b.alloc_ns, promote_after_ns_));
    } else if (newest_ns_ - b.alloc_ns > promote_after_ns_) {
      sink.store(b, kLiveLevel);
      --young_live_;
      ++young_version_;
    } else {
      return;
    }
    young_.pop_front();
    ++head_id_;
  }
}

void BlockPairing::store_freed_young(BlockSink& sink) {
  for (Young& y : young_) {
    const StoredBlock& b = y.block;
    if (y.stored || b.free_ns == kStillLive) continue;
    sink.store(b, lifetime_level(b.free_ns - b.alloc_ns, promote_after_ns_));
    y.stored = true;
  }
}

void BlockPairing::store_all(BlockSink& sink) {
  for (const Young& y : young_) {
    const StoredBlock& b = y.block;
    if (y.stored) continue;
    sink.store(b, b.free_ns == kStillLive
                      ? kLiveLevel
                      : lifetime_level(b.free_ns - b.alloc_ns, promote_after_ns_));
  }
  if (young_live_ != 0) ++young_version_;
  head_id_ += int64_t(young_.size());
  young_.clear();
  young_live_ = 0;
}

}  // namespace memtap::viewdata
