// The pool view's "Active, free pending" state: a PTA block whose FREE said free_pending is
// drawn in its segment, apart from the allocated blocks and the free gaps, from that FREE
// until its FREE_COMPLETED, at any instant; the block index keeps each wait, whether it is
// still open, over in memory or written to its file. MemEvents in, as the engine's thread
// gives them (the readers map the rows' Attr pending and FREE_COMPLETED to them).
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "monitor/viewdata/block_index.h"
#include "monitor/viewdata/pool_data.h"

namespace memtap {
namespace {

using viewdata::BlockIndex;
using viewdata::BlockIndexOptions;
using viewdata::BlockQueries;
using viewdata::PoolData;
using viewdata::PoolItem;
using viewdata::PoolRequest;

constexpr uint32_t kPid = 9;
constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;
constexpr uint64_t kSeg = 0x7f00'0000'0000;

class DeviceFeed {
 public:
  explicit DeviceFeed(BlockIndexOptions options = {}) {
    std::string error;
    index_ = BlockIndex::create(options, &error);
    EXPECT_NE(index_, nullptr) << error;
  }

  MemEvent& event(int64_t ts, MemEventKind kind, Layer layer, uint64_t addr, uint64_t size = 0) {
    MemEvent& e = events_.emplace_back();
    e.ts_ns = ts;
    e.pid = kPid;
    e.tid = kPid;
    e.device = 0;
    e.kind = kind;
    e.layer = layer;
    e.addr = addr;
    e.size_bytes = size;
    if (kind == MemEventKind::kMalloc) e.owner = strings_.intern("owner" + std::to_string(ts));
    return e;
  }
  void segment(int64_t ts, uint64_t addr, uint64_t size) {
    event(ts, MemEventKind::kMalloc, Layer::kHal, addr, size);
  }
  void block(int64_t ts, uint64_t addr, uint64_t size) {
    event(ts, MemEventKind::kMalloc, Layer::kPta, addr, size);
  }
  void free(int64_t ts, uint64_t addr, bool pending = false) {
    event(ts, MemEventKind::kFree, Layer::kPta, addr).free_pending = pending;
  }
  void completed(int64_t ts, uint64_t addr) {
    event(ts, MemEventKind::kFreeCompleted, Layer::kPta, addr);
  }

  PoolData pool_at(int64_t t) {
    index_->add(events_.data(), events_.size(), strings_);
    events_.clear();
    PoolRequest r;
    r.pid = kPid;
    r.device = 0;
    r.at_ns = t;
    std::promise<PoolData> result;
    index_->post([&](BlockQueries& q) { result.set_value(compute_pool(q, r)); });
    return result.get_future().get();
  }

  BlockIndex& index() { return *index_; }

 private:
  std::unique_ptr<BlockIndex> index_;
  StringTable strings_;
  std::vector<MemEvent> events_;
};

const PoolItem* block_at(const PoolData& d, uint64_t addr) {
  for (const auto& s : d.segments)
    for (const PoolItem& b : s.blocks)
      if (b.addr == addr) return &b;
  return nullptr;
}

// A 2 MiB segment; A (1 MiB) stays; B (512 KiB) is freed at 40 while another stream still
// uses it, and the pool takes it back at 60.
void side_stream(DeviceFeed& f) {
  f.segment(10, kSeg, 2 * MiB);
  f.block(20, kSeg, MiB);
  f.block(30, kSeg + MiB, 512 * KiB);
  f.free(40, kSeg + MiB, true);
  f.completed(60, kSeg + MiB);
}

TEST(PoolPending, ABlockWaitingForAnotherStreamIsDrawnInItsOwnState) {
  DeviceFeed f;
  side_stream(f);

  const PoolData before = f.pool_at(35);
  ASSERT_EQ(before.segments.size(), 1u);
  EXPECT_EQ(before.allocated_bytes, 1536 * KiB);
  EXPECT_EQ(before.pending_bytes, 0u);
  EXPECT_FALSE(block_at(before, kSeg + MiB)->pending);

  const PoolData waiting = f.pool_at(50);
  ASSERT_EQ(waiting.segments.size(), 1u);
  EXPECT_EQ(waiting.allocated_bytes, MiB);
  EXPECT_EQ(waiting.pending_bytes, 512 * KiB);
  EXPECT_EQ(waiting.pending_blocks, 1u);
  EXPECT_EQ(waiting.free_bytes, 512 * KiB);
  EXPECT_EQ(waiting.segments[0].pending_bytes, 512 * KiB);
  ASSERT_EQ(waiting.segments[0].gaps.size(), 1u);  // only after the pending block
  EXPECT_EQ(waiting.segments[0].gaps[0].addr, kSeg + 1536 * KiB);
  const PoolItem* b = block_at(waiting, kSeg + MiB);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->pending);
  EXPECT_EQ(b->free_ns, 40);
  EXPECT_EQ(b->completed_ns, 60);
  EXPECT_EQ(b->owner, "owner30");
  EXPECT_FALSE(block_at(waiting, kSeg)->pending);

  const PoolData after = f.pool_at(60);
  EXPECT_EQ(after.pending_blocks, 0u);
  EXPECT_EQ(after.free_bytes, MiB);
  EXPECT_EQ(block_at(after, kSeg + MiB), nullptr);
}

TEST(PoolPending, AWaitNotOverYetIsPendingUpToNow) {
  DeviceFeed f;
  f.segment(10, kSeg, 2 * MiB);
  f.block(20, kSeg, MiB);
  f.free(40, kSeg, true);
  const PoolData d = f.pool_at(45);
  EXPECT_EQ(d.pending_blocks, 1u);
  EXPECT_EQ(d.allocated_bytes, 0u);
  const PoolItem* b = block_at(d, kSeg);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->completed_ns, viewdata::kStillLive);
  EXPECT_EQ(f.index().status().pending_frees, 1u);
  // Before its FREE it was allocated.
  EXPECT_FALSE(block_at(f.pool_at(39), kSeg)->pending);
}

TEST(PoolPending, LongLivedBlocksAndLongWaitsAreFoundInTheFile) {
  BlockIndexOptions options;
  options.promote_after_ns = 5;  // every block is stored early, as in a long session
  DeviceFeed f(options);
  f.segment(10, kSeg, 4 * MiB);
  for (int i = 0; i < 50; ++i) f.block(20 + i, kSeg + uint64_t(i) * 64 * KiB, 64 * KiB);
  f.free(1000, kSeg + 3 * 64 * KiB, true);
  f.free(1001, kSeg + 7 * 64 * KiB, true);
  f.completed(1500, kSeg + 7 * 64 * KiB);
  f.completed(9000, kSeg + 3 * 64 * KiB);  // a long wait
  f.block(9500, kSeg + 60 * 64 * KiB, 64 * KiB);
  for (int64_t t : {int64_t(1200), int64_t(1001)}) {
    const PoolData d = f.pool_at(t);
    EXPECT_EQ(d.pending_blocks, 2u) << t;
    EXPECT_EQ(d.pending_bytes, 128 * KiB) << t;
    EXPECT_EQ(d.allocated_bytes, 48 * 64 * KiB) << t;
  }
  EXPECT_EQ(f.pool_at(2000).pending_blocks, 1u);
  EXPECT_EQ(f.pool_at(1000).pending_blocks, 1u);
  EXPECT_EQ(f.pool_at(999).pending_blocks, 0u);
  EXPECT_EQ(f.pool_at(9000).pending_blocks, 0u);
}

TEST(PoolPending, ANewBlockAtAPendingAddressEndsTheWait) {
  DeviceFeed f;
  f.segment(10, kSeg, 2 * MiB);
  f.block(20, kSeg, MiB);
  f.free(30, kSeg, true);
  f.block(50, kSeg, 256 * KiB);  // the completion was lost
  EXPECT_EQ(f.pool_at(40).pending_blocks, 1u);
  const PoolData d = f.pool_at(60);
  EXPECT_EQ(d.pending_blocks, 0u);
  EXPECT_EQ(d.allocated_bytes, 256 * KiB);
}

TEST(PoolPending, APendingBlockKeepsTheDevicesPoolDrawn) {
  DeviceFeed f;
  f.segment(10, kSeg, 2 * MiB);
  f.block(20, kSeg, MiB);
  f.free(30, kSeg, true);
  const PoolData d = f.pool_at(40);  // no PTA block live, one pending
  EXPECT_EQ(d.source, blocks::PoolSource::kDeviceSegments);
  ASSERT_EQ(d.segments.size(), 1u);
  EXPECT_EQ(d.pending_bytes, MiB);
}

TEST(PoolPending, TheDevicesPoolNamesThePendingStateAndTheHostsDoesNot) {
  DeviceFeed f;
  side_stream(f);
  const PoolData d = f.pool_at(50);
  using viewdata::PoolBlockState;
  EXPECT_EQ(viewdata::pool_states(d),
            (std::vector<PoolBlockState>{PoolBlockState::kAllocated, PoolBlockState::kPendingFree,
                                         PoolBlockState::kFree}));
  // Named whether or not a block is pending then: the legend stays as the cursor moves.
  EXPECT_EQ(viewdata::pool_states(f.pool_at(35)).size(), 3u);
  EXPECT_STREQ(viewdata::pool_state_name(PoolBlockState::kPendingFree), "Active, free pending");
  EXPECT_EQ(viewdata::state_of(*block_at(d, kSeg + MiB)), PoolBlockState::kPendingFree);
  EXPECT_EQ(viewdata::state_of(*block_at(d, kSeg)), PoolBlockState::kAllocated);
  PoolData host;
  host.source = blocks::PoolSource::kHostMappings;
  EXPECT_EQ(viewdata::pool_states(host),
            (std::vector<PoolBlockState>{PoolBlockState::kAllocated, PoolBlockState::kFree}));
}

}  // namespace
}  // namespace memtap
