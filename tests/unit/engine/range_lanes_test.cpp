// RangeLanes: each process's ranges in lanes, nested ones stacked and overlapping ones
// apart, an end closing the latest open range of its name, found by time, and bounded.
#include "monitor/engine/range_lanes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "monitor/engine/step_marks.h"
#include "tests/unit/engine/mark_event.h"

namespace memtap {
namespace {

using test::mark_event;

// "name start-end" per range of the lane, in order.
std::vector<std::string> lane_text(const RangeLane& lane, const StringTable& strings) {
  std::vector<std::string> out;
  for (const RangeSpan& r : lane.kept) {
    out.push_back(strings.get(r.name) + " " + std::to_string(r.start_ts_ns) + "-" +
                  std::to_string(r.end_ts_ns));
  }
  return out;
}

TEST(RangeLanes, NestedRangesStackAndOverlappingOnesKeepApart) {
  StringTable strings;
  StepMarks marks(&strings);
  const uint32_t step = strings.intern("step"), fwd = strings.intern("forward"),
                 bwd = strings.intern("backward"), io = strings.intern("io");
  const auto start = [&](int64_t t, uint32_t name) {
    marks.add(mark_event(MemEventKind::kRangeStart, 1, t, name));
  };
  const auto end = [&](int64_t t, uint32_t name) {
    marks.add(mark_event(MemEventKind::kRangeEnd, 1, t, name));
  };
  start(100, step);
  start(110, fwd);
  end(150, fwd);
  start(160, bwd);
  start(170, io);  // another thread's, overlapping backward without nesting in it
  end(190, bwd);
  start(195, fwd);  // lane 1 is free again; io still holds lane 2
  end(200, io);
  end(210, fwd);
  end(220, step);
  start(300, step);  // still open

  const RangeLanes* r = marks.ranges(1);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->lanes.size(), 3u);
  EXPECT_EQ(lane_text(r->lanes[0], strings), (std::vector<std::string>{"step 100-220"}));
  EXPECT_EQ(lane_text(r->lanes[1], strings),
            (std::vector<std::string>{"forward 110-150", "backward 160-190", "forward 195-210"}));
  EXPECT_EQ(lane_text(r->lanes[2], strings), (std::vector<std::string>{"io 170-200"}));
  ASSERT_EQ(r->open.size(), 1u);
  EXPECT_EQ(r->open[0].span.start_ts_ns, 300);
  EXPECT_EQ(r->open[0].lane, 0u);
  EXPECT_EQ(marks.ranges(2), nullptr);
}

TEST(RangeLanes, AnEndClosesTheLatestOpenRangeOfItsName) {
  StringTable strings;
  RangeLanes r;
  const uint32_t a = strings.intern("a"), b = strings.intern("b");
  range_started(r, 10, a, 100);
  range_started(r, 20, a, 100);  // lane 1
  range_started(r, 30, b, 100);  // lane 2
  range_ended(r, 40, a, 100);    // the a of lane 1; b stays open in lane 2
  range_ended(r, 50, strings.intern("never begun"), 100);
  EXPECT_EQ(r.unmatched_ends, 1u);
  ASSERT_EQ(r.lanes.size(), 2u);
  EXPECT_TRUE(r.lanes[0].kept.empty());
  EXPECT_EQ(lane_text(r.lanes[1], strings), (std::vector<std::string>{"a 20-40"}));
  ASSERT_EQ(r.open.size(), 2u);
  EXPECT_EQ(r.open[0].lane, 0u);
  EXPECT_EQ(r.open[1].lane, 2u);
}

TEST(RangeLanes, RangesOverlappingATimeSpanAreFoundIncludingOneBegunBeforeIt) {
  StringTable strings;
  RangeLanes r;
  const uint32_t n = strings.intern("r");
  for (int64_t i = 0; i < 10; ++i) {
    range_started(r, i * 100, n, 100);
    range_ended(r, i * 100 + 50, n, 100);
  }
  const TrackSpan span = ranges_between(r.lanes[0], 230, 420);  // 200-250 ... 400-450
  EXPECT_EQ(span.first, 2u);
  EXPECT_EQ(span.last, 5u);
  const TrackSpan gap = ranges_between(r.lanes[0], 260, 290);
  EXPECT_EQ(gap.first, gap.last);
}

TEST(RangeLanes, DeepNestingAndUnendedRangesStayBounded) {
  StringTable strings;
  RangeLanes r;
  const uint32_t n = strings.intern("r");
  for (int64_t i = 0; i < 1000; ++i) range_started(r, i, n, 100);
  EXPECT_EQ(r.open.size(), RangeLanes::kMaxOpen);
  EXPECT_EQ(r.too_deep, 1000 - RangeLanes::kMaxLanes);
  // The innermost (laneless) ones close first, and never take a lane's place.
  for (int64_t i = 0; i < 1000; ++i) range_ended(r, 2000 + i, n, 100);
  EXPECT_TRUE(r.open.empty());
  EXPECT_EQ(r.unmatched_ends, 1000 - RangeLanes::kMaxOpen);
  ASSERT_EQ(r.lanes.size(), RangeLanes::kMaxLanes);
  for (const RangeLane& lane : r.lanes) EXPECT_EQ(lane.kept.size(), 1u);
  // A lane thins past its cap: 10 ranges, cap 4 -> every 4th stays.
  RangeLanes thin;
  for (int64_t i = 0; i < 10; ++i) {
    range_started(thin, i * 10, n, 4);
    range_ended(thin, i * 10 + 5, n, 4);
  }
  std::vector<int64_t> starts;
  for (const RangeSpan& s : thin.lanes[0].kept) starts.push_back(s.start_ts_ns);
  EXPECT_EQ(starts, (std::vector<int64_t>{0, 40, 80}));
  EXPECT_EQ(thin.lanes[0].stride, 4u);
}

TEST(RangeLanes, RangesTooDeepForALaneAreCountedWhereTheyLie) {
  StringTable strings;
  RangeLanes r;
  const uint32_t n = strings.intern("r");
  // Every lane held from 0 to 10000; three ranges nested past them: 100-200, 5000-5900
  // (the longest), and 9000, still open.
  for (uint32_t i = 0; i < RangeLanes::kMaxLanes; ++i) range_started(r, i, n, 100);
  range_started(r, 100, n, 100);
  range_ended(r, 200, n, 100);
  range_started(r, 5000, n, 100);
  range_ended(r, 5900, n, 100);
  range_started(r, 9000, n, 100);
  EXPECT_EQ(r.too_deep, 3u);
  EXPECT_EQ(too_deep_between(r, 0, 10000), 3u);
  EXPECT_EQ(too_deep_between(r, 150, 160), 1u);    // inside the first
  EXPECT_EQ(too_deep_between(r, 300, 4000), 0u);   // between the first two
  EXPECT_EQ(too_deep_between(r, 5800, 5850), 1u);  // inside the longest, begun long before
  EXPECT_EQ(too_deep_between(r, 6000, 8000), 0u);
  EXPECT_EQ(too_deep_between(r, 8000, 9000), 1u);  // the open one, from its start on
  EXPECT_EQ(too_deep_between(r, 20000, 30000), 1u);

  // Past its cap the track thins, and each range kept stands for `stride` of them.
  RangeLanes thin;
  for (uint32_t i = 0; i < RangeLanes::kMaxLanes; ++i) range_started(thin, i, n, 4);
  for (int64_t i = 0; i < 16; ++i) {
    range_started(thin, 100 + i * 10, n, 4);
    range_ended(thin, 105 + i * 10, n, 4);
  }
  EXPECT_EQ(thin.too_deep_spans.stride, 4u);
  EXPECT_EQ(too_deep_between(thin, 0, 1000), 16u);
}

}  // namespace
}  // namespace memtap
