// The pool of one (process, device): reserved segments, the blocks inside them, the free
// gaps between, and fragmentation.
//
// Where segments come from:
//  - host: anonymous mappings (HOST, is_mmap) are the segments, heap blocks whose start
//    lies inside a mapping belong to it; other heap blocks are "unsegmented";
//  - a device with PTA blocks: HAL blocks (driver allocations) are the segments and PTA
//    blocks inside them (by address range) are the blocks. Contiguous virtual-memory
//    mappings (is_mapping_api) are one segment: the pages of an expandable segment, which
//    PyTorch maps one cuMemMap at a time into one reserved range and carves blocks from
//    across (free bytes in adjacent pages are one gap). Reserved is the PTA events'
//    pool_total (Attr "total") when they carry it, else the segments' sizes;
//  - a device with PTA blocks and pool_total but no HAL blocks: reserved and allocated are
//    known, where the free bytes lie is not (largest_free_gap and fragmentation are -1);
//  - otherwise (no mapping, a device without PTA blocks) there is no pool: every block is
//    unsegmented and the figures are 0.
// Fragmentation is 1 - largest free gap / free bytes: 0 when all free bytes are one gap,
// near 1 when they are scattered. Free bytes are reserved - allocated - pending.
//
// Block states, as PyTorch's snapshot names them: active_allocated (a live PTA block, in
// allocated_bytes), active_pending_free (a PTA block whose FREE said free_pending, until its
// FREE_COMPLETED: not allocated - the program let go of it - but not free either, the pool
// cannot hand it out while another stream may still use it; in pending_bytes) and inactive
// (the free gaps). Host pools have no pending blocks.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "monitor/engine/blocks/block_table.h"
#include "monitor/engine/blocks/keys.h"
#include "monitor/engine/flat_map.h"
#include "monitor/model/mem_event.h"

namespace memtap::blocks {

enum class PoolSource : uint8_t {
  kNoPool,          // nothing reserved is known
  kHostMappings,    // segments: anonymous mappings
  kDeviceSegments,  // segments: HAL blocks, blocks: PTA blocks
  kPoolTotalOnly,   // PTA pool_total known, no segment addresses
};

struct PoolBlock {
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  int64_t alloc_ts_ns = 0;
  uint64_t allocation_id = 0;
  uint32_t owner = 0;  // StringTable ids (a pool holds many blocks; labels stay ids here)
  uint32_t name = 0;
  bool pending = false;       // active_pending_free (above)
  int64_t free_ns = kNoTime;  // pending: when its FREE came
};

// Whether a driver allocation API maps virtual memory (its blocks are pages that contiguous
// neighbours extend), as the HAL rows name it.
inline bool is_mapping_api(std::string_view api) {
  return api == "cuMemMap";
}

struct PoolSegment {
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  int64_t alloc_ts_ns = 0;
  uint64_t allocation_id = 0;
  uint64_t blocks = 0;
  uint64_t allocated_bytes = 0;  // blocks' bytes inside the segment
  uint64_t pending_bytes = 0;    // pending blocks' bytes inside the segment (in `blocks` too)
  uint64_t free_bytes = 0;       // bytes no block covers
  uint64_t largest_free_gap = 0;
  double fragmentation = 0;
  std::vector<PoolBlock> block_list;  // address order; empty unless asked for
};

struct PoolState {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  int64_t ts_ns = kNoTime;  // the instant described
  PoolSource source = PoolSource::kNoPool;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t pending_bytes = 0;  // blocks whose free is pending (not in allocated_bytes)
  uint64_t pending_blocks = 0;
  uint64_t free_bytes = 0;            // reserved - allocated - pending (0 if they exceed it)
  int64_t largest_free_gap = -1;      // -1: unknown (no segment addresses)
  double fragmentation = -1;          // -1: unknown
  std::vector<PoolSegment> segments;  // address order
  uint64_t unsegmented_blocks = 0;    // blocks outside every segment
  uint64_t unsegmented_bytes = 0;
};

// segments: the segment layer's blocks (may be null); blocks: the pool's blocks (may be
// null); pending: its blocks whose free is pending, by address (may be null); keys: the
// device's, for the blocks' owner and name; pool_total: reserved as the framework reports
// it, or kUnknown. with_blocks fills each segment's block_list. Costs O(n log n) in live
// blocks.
PoolState compute_pool_state(const BlockTable* segments, const BlockTable* blocks,
                             const FlatMap<PendingBlock>* pending, const KeyIndex& keys,
                             int64_t pool_total, PoolSource segment_source, bool with_blocks);

// A moment of the pool as the fragmentation report shows it.
struct FragmentationMoment {
  bool found = false;
  int64_t ts_ns = kNoTime;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t free_bytes = 0;
  int64_t largest_free_gap = -1;
  double fragmentation = -1;
  uint64_t segments = 0;
};

FragmentationMoment moment_of(const PoolState& s);

// The worst moments seen. The pool is evaluated just before each segment change (a segment
// allocated or freed, a new pool_total: the moment the allocator found no room, or gave
// memory back), at each STEP and when a query asks; an evaluation costs O(n log n) in live blocks,
// so one is skipped when fewer than live/amortization pool events happened since the last
// (keeping the cost amortised O(log n) per event); skipped ones are counted.
struct FragmentationTracker {
  uint64_t evaluations = 0;
  uint64_t skipped = 0;
  uint64_t pool_events_since = 0;  // pool block or segment events since the last evaluation
  FragmentationMoment worst;       // most free bytes outside the largest gap (segments known)
  FragmentationMoment most_free;   // most reserved - allocated
};

// asked: memory was being asked for then (the pool about to grow, a step beginning), the
// only moments `worst` is taken from; every moment counts for most_free.
void consider_moment(FragmentationTracker& t, const FragmentationMoment& m, bool asked);

struct FragmentationResult {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  PoolSource source = PoolSource::kNoPool;  // now
  uint64_t evaluations = 0;
  uint64_t skipped_evaluations = 0;
  // "Worst": the most free bytes stranded outside the largest gap (free - largest gap),
  // i.e. the most memory the pool held that a single request could not use, at a moment
  // memory was asked for (consider_moment); ties keep the earliest. Found only where
  // segments are known.
  FragmentationMoment worst;
  FragmentationMoment most_free;  // the most reserved - allocated
  FragmentationMoment now;
};

}  // namespace memtap::blocks
