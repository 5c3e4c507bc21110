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
  range_started(r, 10, a);
  range_started(r, 20, a);     // lane 1
  range_started(r, 30, b);     // lane 2
  range_ended(r, 40, a, 100);  // the a of lane 1; b stays open in lane 2
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
    range_started(r, i * 100, n);
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
  for (int64_t i = 0; i < 1000; ++i) range_started(r, i, n);
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
    range_started(thin, i * 10, n);
    range_ended(thin, i * 10 + 5, n, 4);
  }
  std::vector<int64_t> starts;
  for (const RangeSpan& s : thin.lanes[0].kept) starts.push_back(s.start_ts_ns);
  EXPECT_EQ(starts, (std::vector<int64_t>{0, 40, 80}));
  EXPECT_EQ(thin.lanes[0].stride, 4u);
}

}  // namespace
}  // namespace memtap
