// See lifetime_data.h.
#include "monitor/viewdata/lifetime_data.h"

#include <algorithm>
#include <map>
#include <utility>

namespace memtap::viewdata {
namespace {

void drop_stacks(BlockRow& b) {
  b.stack_python.clear();
  b.stack_python.shrink_to_fit();
  b.stack_c.clear();
  b.stack_c.shrink_to_fit();
}

}  // namespace

bool live_in(const BlockRow& b, int64_t t0_ns, int64_t t1_ns) {
  return b.alloc_ns <= t1_ns && b.free_ns > t0_ns;
}

LifetimeData compute_lifetime(BlockQueries& q, const LifetimeRequest& r) {
  LifetimeData d;
  d.pid = r.pid;
  d.device = r.device;
  d.t0_ns = r.t0_ns;
  // Behind a flood, the index knows nothing after its newest event: the graph hatches the
  // rest, as it does what the answer has not reached yet, rather than draw it empty.
  d.t1_ns = std::max(r.t0_ns, std::min(r.t1_ns, q.covered_until_ns()));
  BlockFilter f;
  f.pid = r.pid;
  f.device = r.device;
  f.t0_ns = r.t0_ns;
  f.t1_ns = r.t1_ns;
  BlockSet set = q.largest(f, r.max_blocks);
  d.blocks = std::move(set.blocks);
  d.matching_blocks = set.matching_blocks;
  d.matching_bytes = set.matching_bytes;
  for (BlockRow& b : d.blocks) drop_stacks(b);
  // The driver's blocks (HAL) under the others, whatever their sizes and ids: a framework
  // pool's blocks lie inside its HAL segments, and a block as large as its segment ranked
  // before the segment (an earlier id, as a snapshot has them) had the segment hide it.
  std::stable_partition(d.blocks.begin(), d.blocks.end(),
                        [](const BlockRow& b) { return b.layer == Layer::kHal; });

  if (r.selected >= 0) {
    d.selected = q.find(r.selected);
    if (d.selected) {
      drop_stacks(*d.selected);
      const BlockRow& s = *d.selected;
      const bool drawn = std::any_of(d.blocks.begin(), d.blocks.end(),
                                     [&](const BlockRow& b) { return b.id == s.id; });
      if (!drawn && s.pid == r.pid && s.device == r.device && live_in(s, r.t0_ns, r.t1_ns))
        d.blocks.push_back(s);
    }
  }

  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  intervals.reserve(d.blocks.size());
  std::map<std::string, uint64_t> owner_bytes;
  for (const BlockRow& b : d.blocks) {
    intervals.emplace_back(b.addr, b.size_bytes);
    owner_bytes[b.owner] += b.size_bytes;
  }
  d.axis = compress_addresses(std::move(intervals));
  for (auto& [owner, bytes] : owner_bytes) d.owners.push_back({owner, bytes});
  std::sort(d.owners.begin(), d.owners.end(), [](const OwnerShare& a, const OwnerShare& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.owner < b.owner;
  });
  if (d.owners.size() > r.max_owners) d.owners.resize(r.max_owners);
  return d;
}

}  // namespace memtap::viewdata
