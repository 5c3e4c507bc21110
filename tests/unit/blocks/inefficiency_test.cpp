// Inefficient blocks: lazy_used, delayed_free, long_idle (and never used), from ACCESS
// events or, without them, from operator ranges; and the flag when there are neither.
#include <gtest/gtest.h>

#include "tests/unit/blocks/script.h"

namespace memtap::blocks::test {
namespace {

BlockAnalyzerOptions thresholds(int64_t min_ns, double fraction) {
  BlockAnalyzerOptions o;
  o.inefficiency.lazy_used = {min_ns, fraction};
  o.inefficiency.delayed_free = {min_ns, fraction};
  o.inefficiency.long_idle = {min_ns, fraction};
  return o;
}

TEST(Inefficiency, EachCategoryFromAccessEvents) {
  Script s;
  // lazy: first use at 800 of a 1000 ns life
  s.malloc(0, 0x1000, 100, {"lazy_owner", "", "aten::empty"});
  s.access(800, 0x1000);
  s.free(1000, 0x1000);
  // delayed: last use at 100, freed at 1000
  s.malloc(0, 0x2000, 200, {"late"});
  s.access(100, 0x2000);
  s.free(1000, 0x2000);
  // idle: used at 50 and 900, nothing between
  s.malloc(0, 0x3000, 300, {"idle"});
  s.access(50, 0x3000);
  s.access(900, 0x3000);
  s.free(950, 0x3000);
  // fine: used throughout
  s.malloc(0, 0x4000, 400, {"fine"});
  for (int64_t t : {10, 300, 600, 990}) s.access(t, 0x4000);
  s.free(1000, 0x4000);
  // never used
  s.malloc(0, 0x5000, 500, {"never"});
  s.free(1000, 0x5000);
  // still live, first used late: lazy as of now (t = 1000)
  s.malloc(0, 0x6000, 600, {"live_lazy"});
  s.access(900, 0x6000);
  BlockAnalyzer a(s.strings, thresholds(100, 0.5));
  s.feed(a);

  const InefficiencyResult r = a.inefficient_blocks(100, kHostDevice);
  EXPECT_EQ(r.source, UseSource::kAccess);
  EXPECT_FALSE(r.no_use_events);
  EXPECT_EQ(r.blocks_judged, 5u);

  EXPECT_EQ(r.lazy_used.blocks, 2u);
  EXPECT_EQ(r.lazy_used.bytes, 700u);
  ASSERT_EQ(r.lazy_used.top.size(), 2u);
  EXPECT_EQ(r.lazy_used.top[0].addr, 0x6000u);  // 600 B x 900 ns beats 100 B x 800 ns
  EXPECT_EQ(r.lazy_used.top[0].free_ts_ns, kNoTime);
  EXPECT_EQ(r.lazy_used.top[0].gap_ns, 900);
  const InefficientBlock& lazy = r.lazy_used.top[1];
  EXPECT_EQ(lazy.addr, 0x1000u);
  EXPECT_EQ(lazy.size_bytes, 100u);
  EXPECT_EQ(lazy.owner_label, "lazy_owner");
  EXPECT_EQ(lazy.name_label, "aten::empty");
  EXPECT_EQ(lazy.alloc_ts_ns, 0);
  EXPECT_EQ(lazy.free_ts_ns, 1000);
  EXPECT_EQ(lazy.first_use_ns, 800);
  EXPECT_EQ(lazy.last_use_ns, 800);
  EXPECT_EQ(lazy.gap_start_ns, 0);
  EXPECT_EQ(lazy.gap_ns, 800);

  ASSERT_EQ(r.delayed_free.blocks, 1u);
  EXPECT_EQ(r.delayed_free.top[0].addr, 0x2000u);
  EXPECT_EQ(r.delayed_free.top[0].gap_start_ns, 100);
  EXPECT_EQ(r.delayed_free.top[0].gap_ns, 900);

  ASSERT_EQ(r.long_idle.blocks, 1u);
  EXPECT_EQ(r.long_idle.top[0].addr, 0x3000u);
  EXPECT_EQ(r.long_idle.top[0].gap_start_ns, 50);
  EXPECT_EQ(r.long_idle.top[0].gap_ns, 850);

  ASSERT_EQ(r.never_used.blocks, 1u);
  EXPECT_EQ(r.never_used.top[0].addr, 0x5000u);
  EXPECT_EQ(r.never_used.bytes, 500u);
}

TEST(Inefficiency, ThresholdsInNanosecondsAndFractionsBothApply) {
  Script s;
  s.malloc(0, 0x1000, 100);
  s.access(800, 0x1000);
  s.free(1000, 0x1000);
  {
    BlockAnalyzer a(s.strings, thresholds(801, 0));  // 800 ns is below 801 ns
    s.feed(a);
    EXPECT_EQ(a.inefficient_blocks(100, kHostDevice).lazy_used.blocks, 0u);
  }
  {
    BlockAnalyzer a(s.strings, thresholds(0, 0.81));  // 80% of the life is below 81%
    s.feed(a);
    EXPECT_EQ(a.inefficient_blocks(100, kHostDevice).lazy_used.blocks, 0u);
  }
  {
    BlockAnalyzer a(s.strings, thresholds(800, 0.8));
    s.feed(a);
    EXPECT_EQ(a.inefficient_blocks(100, kHostDevice).lazy_used.blocks, 1u);
  }
  BlockAnalyzerOptions big = thresholds(0, 0);
  big.inefficiency.min_size_bytes = 101;
  BlockAnalyzer a(s.strings, big);
  s.feed(a);
  EXPECT_EQ(a.inefficient_blocks(100, kHostDevice).lazy_used.blocks, 0u);
}

TEST(Inefficiency, WithoutAccessOrOperatorEventsTheResultSaysSo) {
  Script s;
  s.malloc(0, 0x1000, 100);
  s.free(1'000'000'000, 0x1000);
  BlockAnalyzer a(s.strings, thresholds(1, 0));
  s.feed(a);
  const InefficiencyResult r = a.inefficient_blocks(100, kHostDevice);
  EXPECT_TRUE(r.no_use_events);
  EXPECT_EQ(r.source, UseSource::kNone);
  EXPECT_EQ(r.blocks_judged, 0u);
  EXPECT_EQ(r.never_used.blocks, 0u);
}

TEST(Inefficiency, OperatorsStandInForAccessesWhenThereAreNone) {
  Script s;
  s.op_start(100, "aten::linear");
  s.op_start(110, "aten::empty");
  s.malloc(120, 0x1000, 1000, {"", "", "aten::linear"});  // outlives the operator by 800
  s.op_end(130, "aten::empty");
  s.malloc(160, 0x2000, 50);  // freed inside the operator: fine
  s.free(190, 0x2000);
  s.op_end(200, "aten::linear");
  s.free(1000, 0x1000);
  s.malloc(300, 0x3000, 70);  // allocated outside any operator: not judged
  s.free(2000, 0x3000);
  BlockAnalyzer a(s.strings, thresholds(100, 0.5));
  s.feed(a);
  const InefficiencyResult r = a.inefficient_blocks(100, kHostDevice);
  EXPECT_EQ(r.source, UseSource::kOperators);
  EXPECT_FALSE(r.no_use_events);
  EXPECT_EQ(r.blocks_judged, 2u);
  ASSERT_EQ(r.delayed_free.blocks, 1u);
  const InefficientBlock& b = r.delayed_free.top[0];
  EXPECT_EQ(b.addr, 0x1000u);
  EXPECT_EQ(b.first_use_ns, 120);
  EXPECT_EQ(b.last_use_ns, 200);
  EXPECT_EQ(b.gap_ns, 800);
  EXPECT_EQ(b.name_label, "aten::linear");
  EXPECT_EQ(r.lazy_used.blocks, 0u);
  EXPECT_EQ(r.long_idle.blocks, 0u);
  EXPECT_EQ(r.never_used.blocks, 0u);
}

// Operator A's block is freed inside A and its address reused by operator B's block on
// another thread; A's end must not count as a use of B's block.
TEST(Inefficiency, AnOperatorsEndDoesNotTouchABlockThatReusedItsBlocksAddress) {
  Script s;
  s.op_start(100, "A");
  s.malloc(110, 0x1000, 10);
  s.free(120, 0x1000);
  s.tid = 2;
  s.op_start(140, "B");
  s.malloc(150, 0x1000, 10);
  s.op_end(180, "B");
  s.tid = 1;
  s.op_end(200, "A");
  s.free(5000, 0x1000);
  BlockAnalyzer a(s.strings, thresholds(100, 0.5));
  s.feed(a);
  const InefficiencyResult r = a.inefficient_blocks(100, kHostDevice);
  ASSERT_EQ(r.delayed_free.blocks, 1u);
  EXPECT_EQ(r.delayed_free.top[0].alloc_ts_ns, 150);
  EXPECT_EQ(r.delayed_free.top[0].last_use_ns, 180);
  EXPECT_EQ(r.delayed_free.top[0].gap_ns, 4820);
}

}  // namespace
}  // namespace memtap::blocks::test
