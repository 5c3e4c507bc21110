// See pool_state.h: one sort of segments, one of the blocks that fall inside them, then a
// sweep per segment for its gaps. Ends and sums saturate: sizes and addresses come from
// untrusted input (saturating.h).
#include "monitor/engine/blocks/pool_state.h"

#include <algorithm>

#include "monitor/engine/saturating.h"

namespace memtap::blocks {
namespace {

// A live or pending block with its address (the table's key).
struct Located {
  uint64_t addr;
  const LiveBlock* block;
  int64_t pending_free_ns = kNoTime;  // pending: its FREE; kNoTime: allocated
};

// A segment of the pool: one driver block, or a run of contiguous mappings (the pages of
// an expandable segment, each its own cuMemMap), described by its first.
struct Segment {
  uint64_t addr;
  uint64_t size_bytes;
  const LiveBlock* first;
};

// A block, or the part of it that lies in one segment: a block can run on into the next
// segment where segments are contiguous.
struct Placed {
  size_t segment;
  Located b;
  uint64_t start;  // b.addr, or for a later part the segment's start
};

}  // namespace

PoolState compute_pool_state(const BlockTable* segments, const BlockTable* blocks,
                             const FlatMap<PendingBlock>* pending, const KeyIndex& keys,
                             int64_t pool_total, PoolSource segment_source, bool with_blocks) {
  PoolState s;
  std::vector<Located> blocks_of_segments;
  if (segments)
    segments->for_each_block([&](uint64_t addr, const LiveBlock& b) {
      blocks_of_segments.push_back({addr, &b});
    });
  std::sort(blocks_of_segments.begin(), blocks_of_segments.end(),
            [](const Located& a, const Located& b) { return a.addr < b.addr; });
  std::vector<Segment> segs;
  segs.reserve(blocks_of_segments.size());
  for (const Located& b : blocks_of_segments) {
    Segment* last = segs.empty() ? nullptr : &segs.back();
    if (last && b.block->mapping && last->first->mapping &&
        saturating_add(last->addr, last->size_bytes) == b.addr) {
      last->size_bytes = saturating_add(last->size_bytes, b.block->size_bytes);
    } else {
      segs.push_back({b.addr, b.block->size_bytes, b.block});
    }
  }

  uint64_t all_block_bytes = 0, all_pending_bytes = 0;
  std::vector<Placed> placed;
  auto place = [&](const Located& block) {
    // The last segment starting at or before the block; the block is inside if it starts
    // before that segment's end.
    auto it = std::upper_bound(segs.begin(), segs.end(), block.addr,
                               [](uint64_t a, const Segment& seg) { return a < seg.addr; });
    if (it != segs.begin()) {
      const Segment& seg = *(it - 1);
      if (block.addr - seg.addr < seg.size_bytes) {
        size_t i = size_t(it - 1 - segs.begin());
        placed.push_back({i, block, block.addr});
        const uint64_t block_end = saturating_add(block.addr, block.block->size_bytes);
        for (++i; i < segs.size() && segs[i].addr < block_end &&
                  segs[i].addr == saturating_add(segs[i - 1].addr, segs[i - 1].size_bytes);
             ++i) {
          placed.push_back({i, block, segs[i].addr});
        }
        return;
      }
    }
    ++s.unsegmented_blocks;
    s.unsegmented_bytes = saturating_add(s.unsegmented_bytes, block.block->size_bytes);
  };
  if (blocks) {
    blocks->for_each_block([&](uint64_t addr, const LiveBlock& b) {
      all_block_bytes = saturating_add(all_block_bytes, b.size_bytes);
      place({addr, &b});
    });
  }
  if (pending) {
    pending->for_each([&](uint64_t addr, const PendingBlock& p) {
      all_pending_bytes = saturating_add(all_pending_bytes, p.block.size_bytes);
      ++s.pending_blocks;
      place({addr, &p.block, p.free_ns});
    });
  }
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return a.segment != b.segment ? a.segment < b.segment : a.start < b.start;
  });

  uint64_t seg_reserved = 0, seg_allocated = 0, seg_pending = 0, largest_gap = 0;
  size_t p = 0;
  s.segments.reserve(segs.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    const LiveBlock& sb = *segs[i].first;
    PoolSegment seg;
    seg.addr = segs[i].addr;
    seg.size_bytes = segs[i].size_bytes;
    seg.alloc_ts_ns = sb.alloc_ts_ns;
    seg.allocation_id = sb.allocation_id;
    const uint64_t end = saturating_add(seg.addr, seg.size_bytes);
    uint64_t cursor = seg.addr;
    for (; p < placed.size() && placed[p].segment == i; ++p) {
      const uint64_t addr = placed[p].start;
      const LiveBlock& b = *placed[p].b.block;
      const uint64_t b_end = std::min(end, saturating_add(placed[p].b.addr, b.size_bytes));
      if (addr > cursor) {
        seg.free_bytes = saturating_add(seg.free_bytes, addr - cursor);
        seg.largest_free_gap = std::max(seg.largest_free_gap, addr - cursor);
      }
      cursor = std::max(cursor, b_end);  // overlapping blocks (bad input) count once
      ++seg.blocks;
      const bool is_pending = placed[p].b.pending_free_ns != kNoTime;
      uint64_t& held = is_pending ? seg.pending_bytes : seg.allocated_bytes;
      held = saturating_add(held, b_end - addr);
      if (with_blocks)
        seg.block_list.push_back({addr, b_end - addr, b.alloc_ts_ns, b.allocation_id,
                                  keys.string_id(kByOwner, b.owner_key),
                                  keys.string_id(kByName, b.name_key), is_pending,
                                  placed[p].b.pending_free_ns});
    }
    if (end > cursor) {
      seg.free_bytes = saturating_add(seg.free_bytes, end - cursor);
      seg.largest_free_gap = std::max(seg.largest_free_gap, end - cursor);
    }
    seg.fragmentation =
        seg.free_bytes ? 1.0 - double(seg.largest_free_gap) / double(seg.free_bytes) : 0.0;
    seg_reserved = saturating_add(seg_reserved, seg.size_bytes);
    seg_allocated = saturating_add(seg_allocated, seg.allocated_bytes);
    seg_pending = saturating_add(seg_pending, seg.pending_bytes);
    largest_gap = std::max(largest_gap, seg.largest_free_gap);
    s.segments.push_back(std::move(seg));
  }

  // Reserved and allocated come in pairs that describe the same memory: the framework's
  // total with all its blocks, or the segments seen with the blocks inside them.
  if (pool_total >= 0) {
    s.reserved_bytes = uint64_t(pool_total);
    s.allocated_bytes = all_block_bytes;
    s.pending_bytes = all_pending_bytes;
    s.source = segs.empty() ? PoolSource::kPoolTotalOnly : segment_source;
  } else if (!segs.empty()) {
    s.reserved_bytes = seg_reserved;
    s.allocated_bytes = seg_allocated;
    s.pending_bytes = seg_pending;
    s.source = segment_source;
  } else {
    return s;  // no pool: every block is unsegmented
  }
  const uint64_t held = saturating_add(s.allocated_bytes, s.pending_bytes);
  s.free_bytes = s.reserved_bytes > held ? s.reserved_bytes - held : 0;
  if (s.source != PoolSource::kPoolTotalOnly) {
    s.largest_free_gap = int64_t(std::min(largest_gap, s.free_bytes));
    s.fragmentation = s.free_bytes ? 1.0 - double(s.largest_free_gap) / double(s.free_bytes) : 0;
  }
  return s;
}

FragmentationMoment moment_of(const PoolState& s) {
  FragmentationMoment m;
  m.found = s.source != PoolSource::kNoPool;
  m.ts_ns = s.ts_ns;
  m.reserved_bytes = s.reserved_bytes;
  m.allocated_bytes = s.allocated_bytes;
  m.free_bytes = s.free_bytes;
  m.largest_free_gap = s.largest_free_gap;
  m.fragmentation = s.fragmentation;
  m.segments = s.segments.size();
  return m;
}

void consider_moment(FragmentationTracker& t, const FragmentationMoment& m, bool asked) {
  if (!m.found) return;
  if (asked && m.largest_free_gap >= 0) {
    const uint64_t stranded = m.free_bytes - uint64_t(m.largest_free_gap);
    const uint64_t worst =
        t.worst.found ? t.worst.free_bytes - uint64_t(t.worst.largest_free_gap) : 0;
    if (!t.worst.found || stranded > worst) t.worst = m;
  }
  if (!t.most_free.found || m.free_bytes > t.most_free.free_bytes) t.most_free = m;
}

}  // namespace memtap::blocks
