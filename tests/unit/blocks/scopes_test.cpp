// Per-scope memory: owner labels (nested with '@'), operators and MSTX ranges; inclusive
// and exclusive bytes and the true peak inside the scope.
#include <gtest/gtest.h>

#include "tests/unit/blocks/script.h"

namespace memtap::blocks::test {
namespace {

const ScopeEntry* find(const std::vector<ScopeEntry>& v, const std::string& name) {
  for (const ScopeEntry& e : v)
    if (e.name == name) return &e;
  return nullptr;
}

TEST(Scopes, NestedOwnerLabelsIncludeTheirInnerLevels) {
  Script s;
  s.malloc(1, 0x1000, 100, {"train"});
  s.malloc(2, 0x2000, 200, {"train@fwd"});
  s.malloc(3, 0x3000, 50, {"train@fwd@attn"});
  s.free(4, 0x2000);
  s.malloc(5, 0x4000, 300, {"train@bwd"});
  s.free(6, 0x1000);
  s.malloc(7, 0x5000, 1000, {"eval"});
  s.free(8, 0x5000);
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const ScopeResult r = a.scopes(100, kHostDevice);
  ASSERT_EQ(r.owners.size(), 5u);
  const char* order[] = {"eval", "train", "train@bwd", "train@fwd", "train@fwd@attn"};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(r.owners[i].name, order[i]);

  const ScopeEntry& train = r.owners[1];
  EXPECT_EQ(train.kind, ScopeKind::kOwner);
  EXPECT_EQ(train.occurrences, -1);
  EXPECT_EQ(train.inclusive_bytes, 650u);
  EXPECT_EQ(train.inclusive_blocks, 4u);
  EXPECT_EQ(train.exclusive_bytes, 100u);
  EXPECT_EQ(train.exclusive_blocks, 1u);
  EXPECT_EQ(train.peak_bytes, 450u);  // at t=5: 100 + 50 + 300
  EXPECT_EQ(train.peak_ts_ns, 5);
  EXPECT_EQ(train.exclusive_peak_bytes, 100u);
  EXPECT_EQ(train.live_bytes, 350u);

  const ScopeEntry& fwd = r.owners[3];
  EXPECT_EQ(fwd.inclusive_bytes, 250u);
  EXPECT_EQ(fwd.exclusive_bytes, 200u);
  EXPECT_EQ(fwd.peak_bytes, 250u);
  EXPECT_EQ(fwd.peak_ts_ns, 3);
  EXPECT_EQ(fwd.exclusive_peak_bytes, 200u);
  EXPECT_EQ(fwd.live_bytes, 50u);

  EXPECT_EQ(r.owners[4].inclusive_bytes, 50u);
  EXPECT_EQ(r.owners[4].exclusive_bytes, 50u);
  EXPECT_EQ(r.owners[2].peak_bytes, 300u);
  EXPECT_EQ(r.owners[0].peak_bytes, 1000u);
  EXPECT_EQ(r.owners[0].live_bytes, 0u);
}

TEST(Scopes, OperatorsAndRangesCountTheirOwnThreadAndProcessWithTheTruePeak) {
  Script s;
  s.range_start(5, "epoch");
  s.op_start(10, "outer");
  s.malloc(11, 0xA000, 100);
  s.op_start(12, "inner");
  s.malloc(13, 0xB000, 200);
  s.tid = 2;
  s.malloc(13, 0xF000, 1000);  // another thread: in the range, not in the operators
  s.tid = 1;
  s.free(14, 0xB000);
  s.malloc(15, 0xC000, 50);
  s.malloc(15, 0x10000, 1000);  // G: freed during the next "inner", which must not lose it
  s.op_end(16, "inner");
  s.free(17, 0xA000);
  s.malloc(18, 0xD000, 400);
  s.op_end(19, "outer");
  s.op_start(20, "inner");
  s.malloc(21, 0xE000, 10);
  s.free(21, 0x10000);
  s.malloc(21, 0x11000, 5);
  s.op_end(22, "inner");
  s.range_end(25, "epoch");
  for (uint64_t addr : {0xC000, 0xD000, 0xE000, 0xF000, 0x11000}) s.free(26, addr);
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const ScopeResult r = a.scopes(100, kHostDevice);

  ASSERT_EQ(r.operators.size(), 2u);
  const ScopeEntry& outer = r.operators[0];
  EXPECT_EQ(outer.name, "outer");
  EXPECT_EQ(outer.kind, ScopeKind::kOperator);
  EXPECT_EQ(outer.occurrences, 1);
  EXPECT_EQ(outer.inclusive_bytes, 1750u);
  EXPECT_EQ(outer.inclusive_blocks, 5u);
  EXPECT_EQ(outer.exclusive_bytes, 500u);
  EXPECT_EQ(outer.exclusive_blocks, 2u);
  EXPECT_EQ(outer.peak_bytes, 1450u);  // C, G and D at t=18; A and B were gone by then
  const ScopeEntry& inner = r.operators[1];
  EXPECT_EQ(inner.name, "inner");
  EXPECT_EQ(inner.occurrences, 2);
  EXPECT_EQ(inner.inclusive_bytes, 1265u);
  EXPECT_EQ(inner.inclusive_blocks, 5u);
  EXPECT_EQ(inner.exclusive_bytes, 1265u);
  EXPECT_EQ(inner.peak_bytes, 1050u);  // the first occurrence: C and G

  ASSERT_EQ(r.ranges.size(), 1u);
  const ScopeEntry& epoch = r.ranges[0];
  EXPECT_EQ(epoch.kind, ScopeKind::kRange);
  EXPECT_EQ(epoch.occurrences, 1);
  EXPECT_EQ(epoch.inclusive_bytes, 2765u);
  EXPECT_EQ(epoch.inclusive_blocks, 8u);
  EXPECT_EQ(epoch.exclusive_bytes, 2765u);
  EXPECT_EQ(epoch.peak_bytes, 2460u);  // at t=21: F, C, G, D and E
  EXPECT_EQ(r.open_operators, 0u);
  EXPECT_EQ(r.open_ranges, 0u);
  EXPECT_EQ(r.unmatched_ends, 0u);
}

TEST(Scopes, AnEndClosesOperatorsLeftOpenInsideItAndStrayEndsAreCounted) {
  Script s;
  s.op_end(1, "stray");
  s.range_end(1, "stray");
  s.op_start(2, "outer");
  s.op_start(3, "inner");  // never ends
  s.malloc(4, 0x1000, 10);
  s.op_end(5, "outer");
  s.op_start(6, "open");
  s.malloc(7, 0x2000, 20);
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const ScopeResult r = a.scopes(100, kHostDevice);
  EXPECT_EQ(r.unmatched_ends, 2u);
  EXPECT_EQ(r.open_operators, 1u);
  ASSERT_EQ(r.operators.size(), 2u);  // "open" is not closed: not in the figures
  const ScopeEntry* outer = find(r.operators, "outer");
  const ScopeEntry* inner = find(r.operators, "inner");
  ASSERT_TRUE(outer && inner);
  EXPECT_EQ(outer->inclusive_bytes, 10u);
  EXPECT_EQ(outer->exclusive_bytes, 0u);
  EXPECT_EQ(inner->inclusive_bytes, 10u);
  EXPECT_EQ(inner->exclusive_bytes, 10u);
  EXPECT_EQ(inner->occurrences, 1);
}

TEST(Scopes, EachDeviceCountsItsOwnBlocks) {
  Script s;
  s.op_start(1, "aten::mm");
  s.malloc(2, 0x1000, 64, {"model"});
  s.device = 0;
  s.layer = Layer::kPta;
  s.malloc(3, 0x7000, 4096, {"model"});
  s.device = kHostDevice;
  s.layer = Layer::kHost;
  s.op_end(4, "aten::mm");
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const ScopeResult host = a.scopes(100, kHostDevice);
  const ScopeResult gpu = a.scopes(100, 0);
  ASSERT_EQ(host.operators.size(), 1u);
  ASSERT_EQ(gpu.operators.size(), 1u);
  EXPECT_EQ(host.operators[0].inclusive_bytes, 64u);
  EXPECT_EQ(gpu.operators[0].inclusive_bytes, 4096u);
  EXPECT_EQ(gpu.basis, Basis::kPta);
  ASSERT_EQ(gpu.owners.size(), 1u);
  EXPECT_EQ(gpu.owners[0].inclusive_bytes, 4096u);
}

}  // namespace
}  // namespace memtap::blocks::test
