// See inefficiency.h.
#include "monitor/engine/blocks/inefficiency.h"

#include <algorithm>

#include "monitor/engine/saturating.h"

namespace memtap::blocks {
namespace {

double waste(const InefficientBlock& b) {
  return double(b.size_bytes) * double(b.gap_ns);
}

bool heap_before(const InefficientBlock& a, const InefficientBlock& b) {
  return waste(a) > waste(b);  // the heap's front is the smallest waste
}

bool qualifies(int64_t gap_ns, int64_t lifetime_ns, const GapThreshold& th) {
  return gap_ns > 0 && gap_ns >= th.min_ns &&
         double(gap_ns) >= th.min_fraction * double(lifetime_ns);
}

// The times a report shows for one block: its uses as the judging source saw them.
struct Uses {
  int64_t first_ns;
  int64_t last_ns;
};

void record(InefficiencyTally& t, Category c, const JudgedBlock& b, Uses uses, int64_t end_ns,
            bool freed, int64_t gap_start_ns, int64_t gap_ns, size_t top_n) {
  CategoryTally& ct = t.categories[c];
  ++ct.blocks;
  ct.bytes = saturating_add(ct.bytes, b.block.size_bytes);
  if (top_n == 0) return;
  InefficientBlock ib;
  ib.addr = b.addr;
  ib.size_bytes = b.block.size_bytes;
  ib.allocation_id = b.block.allocation_id;
  ib.owner = b.owner;
  ib.name = b.name;
  ib.alloc_ts_ns = b.block.alloc_ts_ns;
  ib.free_ts_ns = freed ? end_ns : kNoTime;
  ib.first_use_ns = uses.first_ns;
  ib.last_use_ns = uses.last_ns;
  ib.gap_start_ns = gap_start_ns;
  ib.gap_ns = gap_ns;
  if (ct.top.size() < top_n) {
    ct.top.push_back(std::move(ib));
    std::push_heap(ct.top.begin(), ct.top.end(), heap_before);
  } else if (waste(ib) > waste(ct.top.front())) {
    std::pop_heap(ct.top.begin(), ct.top.end(), heap_before);
    ct.top.back() = std::move(ib);
    std::push_heap(ct.top.begin(), ct.top.end(), heap_before);
  }
}

InefficiencyCategory sorted(const CategoryTally& t, const StringTable& strings) {
  InefficiencyCategory c;
  c.blocks = t.blocks;
  c.bytes = t.bytes;
  c.top = t.top;
  std::sort(c.top.begin(), c.top.end(), [](const InefficientBlock& a, const InefficientBlock& b) {
    if (waste(a) != waste(b)) return waste(a) > waste(b);
    return a.alloc_ts_ns < b.alloc_ts_ns;
  });
  for (InefficientBlock& b : c.top) {
    if (b.owner < strings.size()) b.owner_label = strings.get(b.owner);
    if (b.name < strings.size()) b.name_label = strings.get(b.name);
  }
  return c;
}

}  // namespace

void judge_by_access(InefficiencyTally& t, const JudgedBlock& j, int64_t end_ns, bool freed,
                     const InefficiencyOptions& o, size_t top_n) {
  const LiveBlock& b = j.block;
  const BlockUses& u = j.uses;
  if (b.size_bytes < o.min_size_bytes) return;
  const int64_t lifetime = saturating_sub(end_ns, b.alloc_ts_ns);
  if (freed) ++t.judged;
  if (u.uses == 0) {
    if (freed)
      record(t, kNeverUsed, j, {kNoTime, kNoTime}, end_ns, freed, b.alloc_ts_ns, lifetime, top_n);
    return;
  }
  const Uses uses{u.first_use_ns, u.last_use_ns};
  const int64_t lazy = u.first_use_ns - b.alloc_ts_ns;
  if (qualifies(lazy, lifetime, o.lazy_used))
    record(t, kLazyUsed, j, uses, end_ns, freed, b.alloc_ts_ns, lazy, top_n);
  if (freed) {
    const int64_t delayed = end_ns - u.last_use_ns;
    if (qualifies(delayed, lifetime, o.delayed_free))
      record(t, kDelayedFree, j, uses, end_ns, freed, u.last_use_ns, delayed, top_n);
  }
  if (qualifies(u.max_idle_ns, lifetime, o.long_idle))
    record(t, kLongIdle, j, uses, end_ns, freed, u.max_idle_start_ns, u.max_idle_ns, top_n);
}

void judge_by_operators(InefficiencyTally& t, const JudgedBlock& j, int64_t end_ns, bool freed,
                        const InefficiencyOptions& o, size_t top_n) {
  const LiveBlock& b = j.block;
  const BlockUses& u = j.uses;
  if (!u.in_op || !freed || b.size_bytes < o.min_size_bytes) return;
  ++t.judged;
  // op_last_use_ns is set when the outermost operator ends with the block still live; a
  // block freed inside its operator was released as soon as it could be.
  if (u.op_last_use_ns == kNoTime) return;
  const int64_t delayed = end_ns - u.op_last_use_ns;
  if (qualifies(delayed, end_ns - b.alloc_ts_ns, o.delayed_free))
    record(t, kDelayedFree, j, {b.alloc_ts_ns, u.op_last_use_ns}, end_ns, freed, u.op_last_use_ns,
           delayed, top_n);
}

void fill_categories(InefficiencyResult& r, const InefficiencyTally& t,
                     const StringTable& strings) {
  r.blocks_judged = t.judged;
  r.lazy_used = sorted(t.categories[kLazyUsed], strings);
  r.delayed_free = sorted(t.categories[kDelayedFree], strings);
  r.long_idle = sorted(t.categories[kLongIdle], strings);
  r.never_used = sorted(t.categories[kNeverUsed], strings);
}

}  // namespace memtap::blocks
