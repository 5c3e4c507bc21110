// See pool_data.h: the segments and the pool's blocks live at the instant are read from the
// block index, then placed and swept as compute_pool_state (engine/blocks/pool_state.cpp)
// does it.
#include "monitor/viewdata/pool_data.h"

#include <algorithm>
#include <utility>

namespace memtap::viewdata {
namespace {

PoolItem item_of(BlockRow&& b) {
  PoolItem i;
  i.id = b.id;
  i.addr = b.addr;
  i.size_bytes = b.size_bytes;
  i.layer = b.layer;
  i.is_mmap = b.is_mmap;
  i.alloc_ns = b.alloc_ns;
  i.owner = std::move(b.owner);
  i.name = std::move(b.name);
  return i;
}

BlockFilter at_instant(const PoolRequest& r) {
  BlockFilter f;
  f.pid = r.pid;
  f.device = r.device;
  f.t0_ns = r.at_ns;
  f.t1_ns = r.at_ns;
  return f;
}

std::vector<PoolItem> items(std::vector<BlockRow> rows) {
  std::vector<PoolItem> out;
  out.reserve(rows.size());
  for (BlockRow& b : rows) out.push_back(item_of(std::move(b)));
  std::sort(out.begin(), out.end(),
            [](const PoolItem& a, const PoolItem& b) { return a.addr < b.addr; });
  return out;
}

// Where segments come from at this instant (pool_current.h's choice): the host's mappings;
// a device's HAL blocks once its PTA pool has had a block (`pta_live`: one is live or
// pending then).
blocks::PoolSource source_of(BlockQueries& q, const PoolRequest& r, bool pta_live) {
  if (r.device < 0) return blocks::PoolSource::kHostMappings;
  if (pta_live) return blocks::PoolSource::kDeviceSegments;
  return pool_had_blocks(q, r.pid, r.device, r.at_ns) ? blocks::PoolSource::kDeviceSegments
                                                      : blocks::PoolSource::kNoPool;
}

// Contiguous virtual-memory mappings as one segment (pool_state.h): the pages of an
// expandable segment. The first page stands for it (its id, its time).
std::vector<PoolItem> merge_mapped_pages(std::vector<PoolItem> pages) {
  std::vector<PoolItem> out;
  out.reserve(pages.size());
  for (PoolItem& p : pages) {
    PoolItem* last = out.empty() ? nullptr : &out.back();
    if (last && blocks::is_mapping_api(p.name) && blocks::is_mapping_api(last->name) &&
        last->addr + last->size_bytes == p.addr) {
      last->size_bytes += p.size_bytes;
    } else {
      out.push_back(std::move(p));
    }
  }
  return out;
}

void sweep(PoolData& d, std::vector<PoolItem> segs, std::vector<PoolItem> pool_blocks) {
  // Each block to the last segment starting at or before it, if it starts inside it; a
  // block that runs on into the next segments, where they are contiguous (an expandable
  // segment's pages, each its own cuMemMap), has its part there too (same id: a click on
  // either selects the block).
  std::vector<std::vector<PoolItem>> inside(segs.size());
  for (PoolItem& b : pool_blocks) {
    auto it = std::upper_bound(segs.begin(), segs.end(), b.addr,
                               [](uint64_t a, const PoolItem& s) { return a < s.addr; });
    if (it != segs.begin() && b.addr - (it - 1)->addr < (it - 1)->size_bytes) {
      size_t i = size_t(it - 1 - segs.begin());
      const uint64_t b_end = b.addr + b.size_bytes;
      for (size_t k = i + 1; k < segs.size() && segs[k].addr < b_end &&
                             segs[k].addr == segs[k - 1].addr + segs[k - 1].size_bytes;
           ++k) {
        PoolItem part = b;
        part.addr = segs[k].addr;
        part.size_bytes = b_end - segs[k].addr;
        inside[k].push_back(std::move(part));
      }
      inside[i].push_back(std::move(b));
    } else {
      ++d.unsegmented_blocks;
      d.unsegmented_bytes += b.size_bytes;
    }
  }
  for (size_t i = 0; i < segs.size(); ++i) {
    PoolSegmentData s;
    s.segment = std::move(segs[i]);
    s.blocks = std::move(inside[i]);  // address order: pool_blocks was (a part comes first)
    const uint64_t end = s.segment.addr + s.segment.size_bytes;
    uint64_t cursor = s.segment.addr;
    auto gap_to = [&](uint64_t to) {
      if (to <= cursor) return;
      s.gaps.push_back({cursor, to - cursor});
      s.free_bytes += to - cursor;
      s.largest_free_gap = std::max(s.largest_free_gap, to - cursor);
    };
    for (const PoolItem& b : s.blocks) {
      gap_to(b.addr);
      const uint64_t b_end = std::min(end, b.addr + b.size_bytes);
      (b.pending ? s.pending_bytes : s.allocated_bytes) += b_end - b.addr;  // as the engine
      cursor = std::max(cursor, b_end);  // overlapping blocks (bad input) count once
    }
    gap_to(end);
    s.fragmentation = s.free_bytes ? 1.0 - double(s.largest_free_gap) / double(s.free_bytes) : 0.0;
    d.reserved_bytes += s.segment.size_bytes;
    d.allocated_bytes += s.allocated_bytes;
    d.pending_bytes += s.pending_bytes;
    d.largest_free_gap = std::max(d.largest_free_gap, s.largest_free_gap);
    d.segments.push_back(std::move(s));
  }
  const uint64_t held = d.allocated_bytes + d.pending_bytes;
  d.free_bytes = d.reserved_bytes > held ? d.reserved_bytes - held : 0;
  d.largest_free_gap = std::min(d.largest_free_gap, d.free_bytes);
  d.fragmentation = d.free_bytes ? 1.0 - double(d.largest_free_gap) / double(d.free_bytes) : 0;
}

}  // namespace

PoolData compute_pool(BlockQueries& q, const PoolRequest& r) {
  PoolData d;
  d.pid = r.pid;
  d.device = r.device;
  d.at_ns = r.at_ns;
  d.covered_until_ns = q.covered_until_ns();

  BlockSet live = q.largest(at_instant(r), r.max_listed);
  d.live_blocks = live.matching_blocks;
  d.live_bytes = live.matching_bytes;

  BlockFilter seg_filter = at_instant(r);
  BlockFilter block_filter = at_instant(r);
  if (r.device < 0) {
    seg_filter.layer = Layer::kHost;
    seg_filter.mmap = true;
    block_filter.layer = Layer::kHost;
    block_filter.mmap = false;
  } else {
    seg_filter.layer = Layer::kHal;
    block_filter.layer = Layer::kPta;
  }
  bool truncated = false;
  std::vector<PoolItem> pool_blocks = items(q.all(block_filter, r.max_blocks, &truncated));
  d.blocks_truncated = truncated;
  if (r.device >= 0) {
    // Freed PTA blocks still waiting for another stream: drawn in their own state.
    std::vector<BlockRow> waiting = q.pending(at_instant(r), r.max_blocks);
    d.pending_blocks = waiting.size();
    for (BlockRow& b : waiting) {
      const int64_t free_ns = b.free_ns, completed_ns = b.free_completed_ns;
      pool_blocks.push_back(item_of(std::move(b)));
      pool_blocks.back().pending = true;
      pool_blocks.back().free_ns = free_ns;
      pool_blocks.back().completed_ns = completed_ns;
    }
    std::sort(pool_blocks.begin(), pool_blocks.end(),
              [](const PoolItem& a, const PoolItem& b) { return a.addr < b.addr; });
  }
  d.source = source_of(q, r, !pool_blocks.empty());
  if (d.source != blocks::PoolSource::kNoPool) {
    BlockSet segs = q.largest(seg_filter, r.max_segments);
    d.segments_live = segs.matching_blocks;
    if (!segs.blocks.empty()) {
      const size_t pages = segs.blocks.size();
      std::vector<PoolItem> merged = merge_mapped_pages(items(std::move(segs.blocks)));
      d.segments_live -= std::min<uint64_t>(d.segments_live, pages - merged.size());
      sweep(d, std::move(merged), std::move(pool_blocks));
    }
    if (d.source == blocks::PoolSource::kHostMappings) {
      auto empty = [](const PoolSegmentData& s) { return s.blocks.empty(); };
      for (const PoolSegmentData& s : d.segments) {
        if (!empty(s)) continue;
        ++d.empty_mappings;
        d.empty_mapping_bytes += s.segment.size_bytes;
      }
      d.segments.erase(std::remove_if(d.segments.begin(), d.segments.end(), empty),
                       d.segments.end());
      d.segments_live -= std::min(d.segments_live, d.empty_mappings);
    }
  }
  if (d.segments.empty()) {
    // Nothing to draw: the view lists the largest live blocks instead.
    d.source = blocks::PoolSource::kNoPool;
    for (BlockRow& b : live.blocks) d.largest_live.push_back(item_of(std::move(b)));
  }
  return d;
}

const char* pool_state_name(PoolBlockState state) {
  switch (state) {
    case PoolBlockState::kAllocated:
      return "Allocated";
    case PoolBlockState::kPendingFree:
      return "Active, free pending";
    case PoolBlockState::kFree:
      return "Free";
  }
  return "?";
}

std::vector<PoolBlockState> pool_states(const PoolData& d) {
  if (d.source == blocks::PoolSource::kDeviceSegments)
    return {PoolBlockState::kAllocated, PoolBlockState::kPendingFree, PoolBlockState::kFree};
  return {PoolBlockState::kAllocated, PoolBlockState::kFree};
}

PoolBlockState state_of(const PoolItem& block) {
  return block.pending ? PoolBlockState::kPendingFree : PoolBlockState::kAllocated;
}

int pool_segment_of(const PoolData& d, int64_t id) {
  if (id < 0) return -1;
  for (size_t i = 0; i < d.segments.size(); ++i) {
    const PoolSegmentData& s = d.segments[i];
    if (s.segment.id == id) return int(i);
    for (const PoolItem& b : s.blocks)
      if (b.id == id) return int(i);
  }
  return -1;
}

}  // namespace memtap::viewdata
