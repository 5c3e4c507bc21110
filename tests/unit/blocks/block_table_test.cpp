// The live-block table and the map under it: a block's uses live in a side table made on
// first need, a stale handle to them is told apart, a 4-byte-valued map slot is 12 B, and
// reserving room rebuilds the map once.
#include "monitor/engine/blocks/block_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "monitor/engine/flat_map.h"

namespace memtap::blocks::test {
namespace {

TEST(FlatMap, AFourByteValueTakesATwelveByteSlot) {
  FlatMap<uint32_t> m;
  m.put(1, 7);
  EXPECT_EQ(m.memory_bytes(), 16 * 12u);  // the first table: 16 slots
  FlatMap<uint64_t> wide;
  wide.put(1, 7);
  EXPECT_EQ(wide.memory_bytes(), 16 * 16u);
}

TEST(FlatMap, AgreesWithStdMapThroughInsertsAndErases) {
  FlatMap<uint32_t> m;
  std::map<uint64_t, uint32_t> expected;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200000; ++i) {
    // Few distinct keys, so that probe runs form and erases shift entries back; the
    // all-ones key too, which lives beside the table.
    uint64_t key = rng() % 4096;
    if (key == 4095) key = ~uint64_t{0};
    if (rng() % 3 == 0) {
      uint32_t value = 0;
      const bool found = m.take(key, &value);
      ASSERT_EQ(found, expected.count(key) == 1);
      if (found) {
        EXPECT_EQ(value, expected[key]);
      }
      expected.erase(key);
    } else {
      const uint32_t value = uint32_t(rng());
      m.put(key, value);
      expected[key] = value;
    }
  }
  ASSERT_EQ(m.size(), expected.size());
  size_t seen = 0;
  m.for_each([&](uint64_t key, uint32_t value) {
    ++seen;
    EXPECT_EQ(value, expected.at(key));
  });
  EXPECT_EQ(seen, expected.size());
}

TEST(FlatMap, ReserveMakesRoomInOneRebuildAndKeepsWhatIsThere) {
  FlatMap<uint32_t> m;
  m.put(3, 30);
  m.reserve(1000);
  EXPECT_EQ(m.rebuilds(), 2u);              // the first table, then 2,048 slots at once
  EXPECT_EQ(m.memory_bytes(), 2048 * 12u);  // at most half full
  for (uint32_t k = 10; k < 1009; ++k) m.put(k, k);
  EXPECT_EQ(m.rebuilds(), 2u) << "1,000 entries fit without another";
  ASSERT_NE(m.find(3), nullptr);
  EXPECT_EQ(*m.find(3), 30u);
  EXPECT_EQ(m.size(), 1000u);
  m.reserve(10);
  EXPECT_EQ(m.memory_bytes(), 2048 * 12u) << "reserve never shrinks";
}

TEST(BlockTable, ABlockHasNoUsesUntilAskedForThem) {
  BlockTable t;
  const uint32_t slot = t.insert(0x1000);
  t.at(slot).size_bytes = 64;
  EXPECT_FALSE(t.at(slot).has_uses);
  EXPECT_EQ(t.uses(t.at(slot), slot).uses, 0u);
  EXPECT_EQ(t.uses(t.at(slot), slot).first_use_ns, kNoTime);

  const uint32_t u = t.uses_of(slot);
  EXPECT_TRUE(t.at(slot).has_uses);
  EXPECT_EQ(t.uses_of(slot), u);  // asked again: the same one
  t.uses_at(u).uses = 3;
  t.uses_at(u).first_use_ns = 10;
  EXPECT_EQ(t.uses(t.at(slot), slot).uses, 3u);

  LiveBlock b;
  BlockUses bu;
  ASSERT_TRUE(t.erase(0x1000, &b, &bu));
  EXPECT_EQ(b.size_bytes, 64u);
  EXPECT_EQ(bu.uses, 3u);
  EXPECT_EQ(bu.first_use_ns, 10);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.erase(0x1000, &b, &bu));
}

TEST(BlockTable, AReusedPlaceStartsCleanAndAStaleHandleIsTold) {
  BlockTable t;
  const uint32_t slot = t.insert(0x1000);
  const uint32_t u = t.uses_of(slot);
  const uint32_t generation = t.uses_at(u).generation;
  t.uses_at(u).op_last_use_ns = 99;
  LiveBlock b;
  BlockUses bu;
  ASSERT_TRUE(t.erase(0x1000, &b, &bu));

  // The freed places are taken again by the next block and its uses.
  const uint32_t slot2 = t.insert(0x2000);
  EXPECT_EQ(slot2, slot);
  EXPECT_FALSE(t.at(slot2).has_uses);
  const uint32_t u2 = t.uses_of(slot2);
  EXPECT_EQ(u2, u);
  EXPECT_NE(t.uses_at(u2).generation, generation);  // an old BlockRef no longer matches
  EXPECT_EQ(t.uses_at(u2).op_last_use_ns, kNoTime);

  // A block without uses erases to the defaults.
  const uint32_t slot3 = t.insert(0x3000);
  t.at(slot3).allocation_id = 5;
  ASSERT_TRUE(t.erase(0x3000, &b, &bu));
  EXPECT_EQ(b.allocation_id, 5u);
  EXPECT_FALSE(b.has_uses);
  EXPECT_EQ(bu.uses, 0u);
  EXPECT_FALSE(bu.in_op);
}

TEST(BlockTable, ManyBlocksAcrossChunksKeepTheirRecordsAndAddresses) {
  BlockTable t;
  constexpr uint64_t kBlocks = 5000;  // several slab chunks
  for (uint64_t i = 0; i < kBlocks; ++i) {
    const uint32_t slot = t.insert(0x10000 + i * 16);
    t.at(slot).size_bytes = i;
    if (i % 7 == 0) t.uses_at(t.uses_of(slot)).uses = uint32_t(i);
  }
  size_t seen = 0;
  t.for_each([&](uint64_t addr, const LiveBlock& b, const BlockUses& u) {
    ++seen;
    EXPECT_EQ(addr, 0x10000 + b.size_bytes * 16);
    EXPECT_EQ(u.uses, b.size_bytes % 7 == 0 ? b.size_bytes : 0u);
  });
  EXPECT_EQ(seen, kBlocks);
  EXPECT_EQ(sizeof(LiveBlock), 40u);
}

// The prefetching sweep visits every block once with its own record, in the index's order,
// for tables smaller and larger than how far it reads ahead.
TEST(BlockTable, EveryBlockSweepSeesEachBlockOnceInTheIndexOrder) {
  for (const uint64_t blocks : {0, 1, 15, 16, 17, 3000}) {
    BlockTable t;
    for (uint64_t i = 0; i < blocks; ++i) t.at(t.insert(0x20000 + i * 32)).size_bytes = i + 1;
    std::vector<uint64_t> in_index_order;
    t.for_each(
        [&](uint64_t addr, const LiveBlock&, const BlockUses&) { in_index_order.push_back(addr); });
    std::vector<uint64_t> swept;
    t.for_each_block([&](uint64_t addr, const LiveBlock& b) {
      swept.push_back(addr);
      EXPECT_EQ(addr, 0x20000 + (b.size_bytes - 1) * 32);
    });
    EXPECT_EQ(swept, in_index_order) << blocks << " blocks";
    EXPECT_EQ(swept.size(), blocks);
  }
}

}  // namespace
}  // namespace memtap::blocks::test
