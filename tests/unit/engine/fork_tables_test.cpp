// What a fork() child's tables start with: its parent's live blocks, shared with the parent
// and marked as inherited, merged with what the child itself recorded before the fork event
// was applied; and how each side goes on alone from there.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "monitor/engine/heap_pairing.h"

namespace memtap {
namespace {

constexpr uint32_t kParent = 4242;
constexpr uint32_t kChild = 4343;

LiveBlock block(uint64_t size_bytes, uint64_t allocation_id) {
  LiveBlock b;
  b.size_bytes = size_bytes;
  b.allocation_id = allocation_id;
  return b;
}

uint64_t addr_of(uint64_t i) {
  return 0x100000 + 16 * i;
}

// A heap that once held `peak` blocks and now holds `live` of them, at 16-byte strides.
LiveTables parent_tables(uint64_t peak, uint64_t live) {
  LiveTables t;
  for (uint64_t i = 0; i < peak; ++i) t.heap.put(addr_of(i), block(8 + i % 64, i + 1));
  LiveBlock gone;
  for (uint64_t i = live; i < peak; ++i) t.heap.take(addr_of(i), &gone);
  t.mmaps.emplace(0x7f0000000000, block(1 << 20, peak + 1));
  return t;
}

std::optional<LiveBlock> heap_block(const LiveTables& t, uint64_t addr) {
  LiveBlock b;
  if (!find_heap_block(t, addr, &b)) return std::nullopt;
  return b;
}

// Pairs events on one process's tables and keeps what they produced.
struct Pairer {
  std::vector<DumpRow> rows;
  uint64_t last_allocation_id = 1000000;
  uint64_t unmatched = 0;
  uint64_t lost = 0;
  PairingOutput out{rows, last_allocation_id, unmatched, lost};

  void malloc(LiveTables& t, uint64_t addr, uint64_t size_bytes) {
    pair_malloc(t, RowStamp{1, 1, 1}, addr, size_bytes, {}, out);
  }
  // The FREE row pair_free wrote.
  DumpRow free(LiveTables& t, uint64_t addr) {
    pair_free(t, RowStamp{1, 1, 1}, addr, out);
    return rows.back();
  }
};

TEST(ForkTables, TheChildGetsEveryLiveBlockOfItsParentMarkedAsInherited) {
  LiveTables parent = parent_tables(200000, 20000);
  const LiveTables child = snapshot_for_child(parent, kParent);
  ASSERT_EQ(live_heap_blocks(child), 20000u);
  ASSERT_EQ(live_heap_blocks(parent), 20000u);
  for (uint64_t i = 0; i < 200000; ++i) {
    const auto c = heap_block(child, addr_of(i));
    const auto p = heap_block(parent, addr_of(i));
    ASSERT_EQ(c.has_value(), i < 20000) << i;
    ASSERT_EQ(p.has_value(), i < 20000) << i;
    if (!c) continue;
    EXPECT_EQ(c->size_bytes, 8 + i % 64);
    EXPECT_EQ(c->allocation_id, i + 1);
    EXPECT_EQ(c->inherited_from_pid, kParent);
    EXPECT_EQ(p->inherited_from_pid, 0u) << "the parent's own blocks stay its own";
  }
  ASSERT_EQ(child.mmaps.size(), 1u);
  EXPECT_EQ(child.mmaps.begin()->second.inherited_from_pid, kParent);
  // Nothing copied: the two share the parent's blocks. A copy per child took 0.2 s and
  // 67 MB of a parent with a million live blocks, for every DataLoader worker.
  EXPECT_EQ(child.base, parent.base);
  EXPECT_EQ(child.heap.size(), 0u);
  EXPECT_LT(child.heap.memory_bytes() + child.gone.memory_bytes(), 4096u);
}

// After the fork each side frees, reuses and allocates on its own: what one does never
// shows in the other's blocks, though they share the blocks of the fork.
TEST(ForkTables, ParentAndChildGoOnAloneFromTheFork) {
  LiveTables parent = parent_tables(2000, 1000);
  LiveTables child = snapshot_for_child(parent, kParent);
  Pairer p, c;

  const DumpRow parent_free = p.free(parent, addr_of(1));
  EXPECT_EQ(parent_free.allocation_id, 2u);
  EXPECT_EQ(parent_free.inherited_from_pid, 0u);
  const DumpRow child_free = c.free(child, addr_of(2));
  EXPECT_EQ(child_free.allocation_id, 3u);
  EXPECT_EQ(child_free.inherited_from_pid, kParent);
  EXPECT_EQ(c.free(child, addr_of(2)).allocation_id, 0u) << "freed once only";
  EXPECT_EQ(c.unmatched, 1u);

  EXPECT_TRUE(heap_block(child, addr_of(1))) << "the parent's free is the parent's";
  EXPECT_TRUE(heap_block(parent, addr_of(2))) << "the child's free is the child's";
  EXPECT_EQ(live_heap_blocks(parent), 999u);
  EXPECT_EQ(live_heap_blocks(child), 999u);

  // A MALLOC over a block still live here closes it first (its FREE was lost): the
  // inherited one in the child, the parent's own in the parent.
  c.malloc(child, addr_of(3), 100);
  ASSERT_EQ(c.rows.size(), 4u);
  EXPECT_EQ(c.rows[2].event, DumpEvent::kFree);
  EXPECT_EQ(c.rows[2].allocation_id, 4u);
  EXPECT_EQ(c.rows[2].inherited_from_pid, kParent);
  EXPECT_EQ(c.lost, 1u);
  EXPECT_EQ(heap_block(child, addr_of(3))->size_bytes, 100u);
  EXPECT_EQ(heap_block(parent, addr_of(3))->allocation_id, 4u);
  const DumpRow reused = c.free(child, addr_of(3));
  EXPECT_EQ(reused.size_bytes, 100u);
  EXPECT_EQ(reused.inherited_from_pid, 0u) << "the child's own block";

  // A freed address allocated anew is a new block, though the shared blocks still hold
  // the old one.
  p.malloc(parent, addr_of(1), 7);
  EXPECT_EQ(p.lost, 0u);
  EXPECT_EQ(heap_block(parent, addr_of(1))->size_bytes, 7u);
  EXPECT_EQ(heap_block(child, addr_of(1))->size_bytes, 8u + 1);
  EXPECT_EQ(live_heap_blocks(parent), 1000u);
}

// A second child forked soon after the first shares the same blocks, and copies only what
// the parent changed since: its new blocks (marked inherited) and what it freed.
TEST(ForkTables, ALaterSiblingCopiesOnlyWhatTheParentChangedSince) {
  LiveTables parent = parent_tables(4000, 4000);
  const LiveTables first = snapshot_for_child(parent, kParent);
  Pairer p;
  p.free(parent, addr_of(10));
  p.malloc(parent, 0x900000, 32);
  const LiveTables second = snapshot_for_child(parent, kParent);
  EXPECT_EQ(second.base, first.base);
  EXPECT_EQ(second.heap.size(), 1u);
  EXPECT_EQ(live_heap_blocks(second), 4000u);
  EXPECT_FALSE(heap_block(second, addr_of(10)));
  EXPECT_EQ(heap_block(second, 0x900000)->inherited_from_pid, kParent);
  EXPECT_TRUE(heap_block(first, addr_of(10)));
  EXPECT_FALSE(heap_block(first, 0x900000));
}

// A child's own fork: the grandchild inherits every block from the child, whether the child
// had it from its parent or allocated it itself.
TEST(ForkTables, AGrandchildInheritsFromItsOwnParent) {
  LiveTables parent = parent_tables(100, 100);
  LiveTables child = snapshot_for_child(parent, kParent);
  Pairer c;
  c.malloc(child, 0x900000, 32);
  const LiveTables grandchild = snapshot_for_child(child, kChild);
  EXPECT_EQ(live_heap_blocks(grandchild), 101u);
  EXPECT_EQ(heap_block(grandchild, addr_of(5))->inherited_from_pid, kChild);
  EXPECT_EQ(heap_block(grandchild, 0x900000)->inherited_from_pid, kChild);
  EXPECT_EQ(heap_block(child, addr_of(5))->inherited_from_pid, kParent);
  EXPECT_EQ(heap_block(child, 0x900000)->inherited_from_pid, 0u);
}

// Once the shared blocks are one process's alone (the other side gave its tables back),
// its next event folds them into its own table, and it pairs as if it had never forked.
TEST(ForkTables, BlocksNoLongerSharedAreFoldedBackIn) {
  for (const bool parent_outlives : {true, false}) {
    SCOPED_TRACE(parent_outlives ? "the child ended" : "the parent ended");
    LiveTables parent = parent_tables(3000, 2000);
    LiveTables child = snapshot_for_child(parent, kParent);
    LiveTables& alone = parent_outlives ? parent : child;
    Pairer p;
    p.free(alone, addr_of(0));
    p.malloc(alone, 0x900000, 32);
    ASSERT_NE(alone.base, nullptr) << "still shared";
    (parent_outlives ? child : parent) = LiveTables{};
    p.free(alone, addr_of(1));
    EXPECT_EQ(alone.base, nullptr);
    EXPECT_EQ(alone.gone.size(), 0u);
    EXPECT_EQ(live_heap_blocks(alone), 1999u);
    EXPECT_EQ(alone.heap.size(), 1999u);
    EXPECT_FALSE(heap_block(alone, addr_of(0)));
    EXPECT_FALSE(heap_block(alone, addr_of(1)));
    EXPECT_EQ(heap_block(alone, 0x900000)->inherited_from_pid, 0u);
    const uint32_t inherited = parent_outlives ? 0 : kParent;
    for (uint64_t i = 2; i < 2000; ++i)
      ASSERT_EQ(heap_block(alone, addr_of(i))->inherited_from_pid, inherited) << i;
    EXPECT_EQ(p.free(alone, addr_of(7)).inherited_from_pid, inherited);
  }
}

// A process whose own changes outgrow the shared blocks stops looking them up on every
// event: it takes its own copy of what it still holds of them.
TEST(ForkTables, AProcessThatChangedMostOfItsBlocksTakesItsOwn) {
  LiveTables parent = parent_tables(1000, 1000);
  const LiveTables child = snapshot_for_child(parent, kParent);
  Pairer p;
  for (uint64_t i = 0; i < 600; ++i) p.free(parent, addr_of(i));
  ASSERT_NE(parent.base, nullptr);
  for (uint64_t i = 0; i < 401; ++i) p.malloc(parent, 0x900000 + 16 * i, 8);
  EXPECT_EQ(parent.base, nullptr);
  EXPECT_EQ(live_heap_blocks(parent), 801u);
  EXPECT_FALSE(heap_block(parent, addr_of(599)));
  EXPECT_EQ(heap_block(parent, addr_of(600))->allocation_id, 601u);
  EXPECT_EQ(live_heap_blocks(child), 1000u) << "the child's blocks are as they were";
  EXPECT_EQ(heap_block(child, addr_of(0))->inherited_from_pid, kParent);
}

// The child's own blocks (recorded before the fork event reached the engine) win over the
// parent's at the same address, whichever of the two tables is the larger.
void expect_merged(uint64_t child_blocks) {
  LiveTables child;
  for (uint64_t i = 0; i < child_blocks; ++i) child.heap.put(addr_of(i), block(1, 1000000 + i));
  child.mmaps.emplace(0x7f0000000000, block(4096, 999));
  // The parent's 3,000 blocks are shared with an earlier child; it has 300 more since.
  LiveTables parent = parent_tables(4000, 3000);
  const LiveTables earlier = snapshot_for_child(parent, kParent);
  Pairer p;
  for (uint64_t i = 3000; i < 3300; ++i) p.malloc(parent, addr_of(i), 5);
  LiveTables snapshot = snapshot_for_child(parent, kParent);
  ASSERT_EQ(snapshot.heap.size(), 300u);
  seed_from_parent(child, std::move(snapshot));
  // Addresses below child_blocks are the child's; the rest of the parent's 3,300 follow.
  const uint64_t expected = std::max<uint64_t>(child_blocks, 3300);
  ASSERT_EQ(live_heap_blocks(child), expected);
  for (uint64_t i = 0; i < expected; ++i) {
    const auto b = heap_block(child, addr_of(i));
    ASSERT_TRUE(b) << i;
    if (i < child_blocks) {
      EXPECT_EQ(b->allocation_id, 1000000 + i) << i;
      EXPECT_EQ(b->inherited_from_pid, 0u) << i;
    } else {
      EXPECT_EQ(b->allocation_id, i < 3000 ? i + 1 : 1000001 + (i - 3000)) << i;
      EXPECT_EQ(b->inherited_from_pid, kParent) << i;
    }
  }
  ASSERT_EQ(child.mmaps.size(), 1u);
  EXPECT_EQ(child.mmaps.begin()->second.allocation_id, 999u) << "the child's own mapping";
  EXPECT_EQ(live_heap_blocks(parent), 3300u) << "the parent's blocks are untouched";
  EXPECT_EQ(heap_block(parent, addr_of(0))->allocation_id, 1u);
}

TEST(ForkTables, TheChildsOwnBlocksWinOverInheritedOnes) {
  expect_merged(10);      // the parent's changes are the larger table
  expect_merged(100000);  // the child's is
}

}  // namespace
}  // namespace memtap
