// What a fork() child's tables start with: its parent's live blocks, copied and marked as
// inherited, merged with what the child itself recorded before the fork event was applied.
#include <gtest/gtest.h>

#include "monitor/engine/heap_pairing.h"

namespace memtap {
namespace {

constexpr uint32_t kParent = 4242;

LiveBlock block(uint64_t size_bytes, uint64_t allocation_id) {
  LiveBlock b;
  b.size_bytes = size_bytes;
  b.allocation_id = allocation_id;
  return b;
}

// A heap that once held `peak` blocks and now holds `live` of them, at 16-byte strides.
LiveTables parent_tables(uint64_t peak, uint64_t live) {
  LiveTables t;
  for (uint64_t i = 0; i < peak; ++i) t.heap.put(0x100000 + 16 * i, block(8 + i % 64, i + 1));
  LiveBlock gone;
  for (uint64_t i = live; i < peak; ++i) t.heap.take(0x100000 + 16 * i, &gone);
  t.mmaps.emplace(0x7f0000000000, block(1 << 20, peak + 1));
  return t;
}

TEST(ForkTables, TheChildGetsEveryLiveBlockOfItsParentMarkedAsInherited) {
  const LiveTables parent = parent_tables(200000, 20000);
  const LiveTables child = snapshot_for_child(parent, kParent);
  ASSERT_EQ(child.heap.size(), 20000u);
  size_t seen = 0;
  child.heap.for_each([&](uint64_t addr, const LiveBlock& b) {
    const LiveBlock* p = parent.heap.find(addr);
    ASSERT_NE(p, nullptr) << addr;
    EXPECT_EQ(b.size_bytes, p->size_bytes);
    EXPECT_EQ(b.allocation_id, p->allocation_id);
    EXPECT_EQ(b.inherited_from_pid, kParent);
    EXPECT_EQ(p->inherited_from_pid, 0u) << "the parent's own blocks stay its own";
    ++seen;
  });
  EXPECT_EQ(seen, 20000u);
  ASSERT_EQ(child.mmaps.size(), 1u);
  EXPECT_EQ(child.mmaps.begin()->second.inherited_from_pid, kParent);
  // Its table sized once for its blocks, then filled: one that grows as the parent's blocks
  // come, in the parent's slot order, piles them up at its front at every size it passes
  // through (FlatMap::for_each), and a PyTorch process's fork held the monitor for 40 s.
  // Nor is it a copy of the parent's table, which is as large as the parent's peak needed.
  EXPECT_EQ(child.heap.rebuilds(), 1u);
  FlatMap<LiveBlock> sized;
  sized.reserve(20000);
  EXPECT_EQ(child.heap.memory_bytes(), sized.memory_bytes());
  EXPECT_LT(child.heap.memory_bytes(), parent.heap.memory_bytes());
}

// The child's own blocks (recorded before the fork event reached the engine) win over the
// parent's at the same address, whichever of the two tables is the larger.
void expect_merged(uint64_t child_blocks) {
  LiveTables child;
  for (uint64_t i = 0; i < child_blocks; ++i)
    child.heap.put(0x100000 + 16 * i, block(1, 1000000 + i));
  child.mmaps.emplace(0x7f0000000000, block(4096, 999));
  LiveTables snapshot = snapshot_for_child(parent_tables(4000, 3000), kParent);
  seed_from_parent(child, std::move(snapshot));
  // Addresses below child_blocks are the child's; the rest of the parent's 3,000 follow.
  const uint64_t expected = std::max<uint64_t>(child_blocks, 3000);
  ASSERT_EQ(child.heap.size(), expected);
  for (uint64_t i = 0; i < expected; ++i) {
    const LiveBlock* b = child.heap.find(0x100000 + 16 * i);
    ASSERT_NE(b, nullptr) << i;
    if (i < child_blocks) {
      EXPECT_EQ(b->allocation_id, 1000000 + i) << i;
      EXPECT_EQ(b->inherited_from_pid, 0u) << i;
    } else {
      EXPECT_EQ(b->allocation_id, i + 1) << i;
      EXPECT_EQ(b->inherited_from_pid, kParent) << i;
    }
  }
  ASSERT_EQ(child.mmaps.size(), 1u);
  EXPECT_EQ(child.mmaps.begin()->second.allocation_id, 999u) << "the child's own mapping";
}

TEST(ForkTables, TheChildsOwnBlocksWinOverInheritedOnes) {
  expect_merged(10);      // the parent's table is the larger
  expect_merged(100000);  // the child's is
}

}  // namespace
}  // namespace memtap
