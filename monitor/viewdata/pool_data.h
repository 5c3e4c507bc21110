// The pool of one process on one device at an instant, as the pool view draws it: its
// segments, the blocks inside each by address, and the free gaps between them.
//
// Segments and blocks follow the engine's pool (monitor/engine/blocks/pool_state.h), here at
// any instant and from the block index rather than the engine's live tables:
//  - a device whose framework pool (PTA) has had blocks: the driver's blocks (HAL, the
//    memory the pool reserved) are the segments and the PTA blocks inside them by address
//    are the blocks;
//  - the host: anonymous mappings (HOST mmap) are the segments and the heap blocks (HOST)
//    that start inside one are its blocks. Only mappings that hold a heap block are drawn:
//    the others are the allocator's and the interpreter's own arenas, whose blocks no hook
//    sees, and a pool of empty 1 MiB bars told a user nothing. They are counted
//    (empty_mappings), and when no mapping holds a block the host has no pool segments;
//  - otherwise there is no pool, and no segments: the view says so and lists the largest
//    live blocks.
// A block belongs to the last segment starting at or before it if it starts before that
// segment's end; overlapping blocks (bad input) count once; fragmentation is 1 - largest
// free gap / free bytes, per segment and over the pool.
//
// States, as the engine has them (engine/blocks/pool_state.h): a block inside a segment is
// Allocated; a PTA block whose free was requested but is pending on another stream (its
// FREE said pending, its FREE_COMPLETED has not come at the instant) is Active, free
// pending: not allocated, not free either (the pool cannot hand it out yet; the curves
// count it in Active, curve_rules.h); the bytes no block covers are Free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "monitor/engine/blocks/pool_state.h"
#include "monitor/viewdata/block_index.h"

namespace memtap::viewdata {

struct PoolRequest {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  int64_t at_ns = 0;
  size_t max_segments = 4000;  // the largest; more are counted, not drawn
  size_t max_blocks = 200000;  // the pool's blocks read (the largest, when there are more)
  size_t max_listed = 50;      // live blocks listed when there are no segments
};

// A block as the pool draws it (without its stacks: the lifetime graph's detail has them).
struct PoolItem {
  int64_t id = 0;
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  Layer layer = Layer::kHost;
  bool is_mmap = false;
  int64_t alloc_ns = 0;
  std::string owner;
  std::string name;
  bool pending = false;      // Active, free pending (above)
  int64_t free_ns = 0;       // pending: when its free was requested
  int64_t completed_ns = 0;  // pending: when the pool took it back (kStillLive: not yet)
};

struct PoolGap {
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
};

struct PoolSegmentData {
  PoolItem segment;              // the HAL block or the mapping
  std::vector<PoolItem> blocks;  // address order
  std::vector<PoolGap> gaps;     // free bytes, address order
  uint64_t allocated_bytes = 0;  // bytes the allocated blocks cover
  uint64_t pending_bytes = 0;    // bytes the pending blocks cover
  uint64_t free_bytes = 0;
  uint64_t largest_free_gap = 0;
  double fragmentation = 0;
};

struct PoolData {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  int64_t at_ns = 0;
  // BlockQueries::covered_until_ns() when asked: past it, behind a flood, the blocks allocated
  // since are not drawn yet.
  int64_t covered_until_ns = std::numeric_limits<int64_t>::max();
  blocks::PoolSource source = blocks::PoolSource::kNoPool;
  std::vector<PoolSegmentData> segments;  // address order
  uint64_t segments_live = 0;             // all segments live then (segments: at most max_segments)
  bool blocks_truncated = false;          // more than max_blocks pool blocks: the largest read
  uint64_t reserved_bytes = 0;            // the segments' bytes
  uint64_t allocated_bytes = 0;           // the allocated blocks' bytes inside them
  uint64_t pending_bytes = 0;             // the pending blocks' bytes inside them
  uint64_t pending_blocks = 0;            // pending blocks drawn (inside a segment or not)
  uint64_t free_bytes = 0;                // reserved - allocated - pending
  uint64_t largest_free_gap = 0;
  double fragmentation = 0;
  // Host: mappings live then that hold no heap block (not drawn; their bytes are still in
  // reserved_bytes and free_bytes, as the engine counts them).
  uint64_t empty_mappings = 0;
  uint64_t empty_mapping_bytes = 0;
  uint64_t unsegmented_blocks = 0;  // pool blocks outside every segment
  uint64_t unsegmented_bytes = 0;
  // Every live block of the scope at the instant, whatever its layer.
  uint64_t live_blocks = 0;
  uint64_t live_bytes = 0;
  std::vector<PoolItem> largest_live;  // no segments: the largest live blocks
};

PoolData compute_pool(BlockQueries& q, const PoolRequest& r);

// The states a pool's bytes can be in (above), in the order the view's legend names them.
enum class PoolBlockState : uint8_t { kAllocated, kPendingFree, kFree };
const char* pool_state_name(PoolBlockState state);  // "Allocated", "Active, free pending", "Free"
// The states `d` can show: Active, free pending only in a device's framework pool (only it
// frees on streams), whether or not a block is pending at the instant, so that the legend
// does not change as the cursor moves.
std::vector<PoolBlockState> pool_states(const PoolData& d);
PoolBlockState state_of(const PoolItem& block);

// The segment holding block `id` (the segment itself, or the one its block is in); -1: none.
int pool_segment_of(const PoolData& d, int64_t id);

}  // namespace memtap::viewdata
