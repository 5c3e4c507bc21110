// The ranges the curves draw as bars, from a recording the real writer made: a row per
// lane with nested ranges above their outer one, a range still open drawn to the span's
// end, ranges too narrow to tell apart joined into one bar that counts them, lanes past
// those shown counted, those too deep to keep counted where they lie, and what Allocated did over a
// range.
#include "monitor/viewdata/range_bars_data.h"

#include <gtest/gtest.h>

#include "monitor/viewdata/curves_data.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

using viewdata::CurvesData;
using viewdata::RangeBar;
using viewdata::RangeBarsData;

CurvesData curves(viewdata::DataSource& source, uint32_t pid, int64_t t0 = 0, int64_t t1 = 0,
                  size_t columns = 1000) {
  viewdata::CurvesRequest r;
  r.pid = pid;
  r.device = kHostDevice;
  r.t0_ns = t0;
  r.t1_ns = t1;
  r.max_points = columns;
  return test::engine_query(source,
                            [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
}

// "lane name start-end (ranges)" per bar, times in ms after the recording's start.
std::vector<std::string> bars_text(const RangeBarsData& data, const test::RecordingBuilder& b) {
  std::vector<std::string> out;
  for (const RangeBar& bar : data.bars) {
    out.push_back(std::to_string(bar.lane) + " " + (bar.name.empty() ? "-" : bar.name) + " " +
                  std::to_string((bar.start_ns - b.at(0)) / 1'000'000) + "-" +
                  std::to_string((bar.end_ns - b.at(0)) / 1'000'000) + " (" +
                  std::to_string(bar.ranges) + (bar.open ? ", open)" : ")"));
  }
  return out;
}

TEST(RangeBarsData, NestedRangesStackAndAnOpenOneRunsToTheSpansEnd) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 100);
  for (int step = 0; step < 2; ++step) {
    const double t = 10 + 40 * step;
    b.range_start(t, "step");
    b.range_start(t + 1, "forward");
    b.malloc(t + 2, 0x2000 + uint64_t(step) * 0x100, 1000);
    b.range_end(t + 10, "forward");
    b.range_start(t + 11, "backward");
    b.free(t + 12, 0x2000 + uint64_t(step) * 0x100);
    b.range_end(t + 20, "backward");
    b.range_end(t + 30, "step");
  }
  b.range_start(95, "evaluate");  // never ended
  b.malloc(100, 0x9000, 32);
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);

  const CurvesData whole = curves(*source, b.pid());
  const RangeBarsData& all = whole.step_marks.ranges;
  EXPECT_EQ(bars_text(all, b), (std::vector<std::string>{
                                   "0 step 10-40 (1)",
                                   "0 step 50-80 (1)",
                                   "0 evaluate 95-100 (1, open)",
                                   "1 forward 11-20 (1)",
                                   "1 backward 21-30 (1)",
                                   "1 forward 51-60 (1)",
                                   "1 backward 61-70 (1)",
                               }));
  EXPECT_EQ(all.lanes, 2u);
  EXPECT_EQ(all.deeper_lanes, 0u);

  // Under +15 ms: step, then forward inside it.
  const std::vector<const RangeBar*> at = viewdata::range_bars_at(all, b.at(15));
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(at[0]->name, "step");
  EXPECT_EQ(at[1]->name, "forward");
  EXPECT_TRUE(viewdata::range_bars_at(all, b.at(45)).empty());

  // forward left 1000 B live, backward freed it.
  const auto forward = viewdata::allocated_between(whole, at[1]->start_ns, at[1]->end_ns);
  ASSERT_TRUE(forward.has_value());
  EXPECT_EQ(forward->end_bytes - forward->start_bytes, 1000);
  const RangeBar& backward = all.bars[4];
  const auto freed = viewdata::allocated_between(whole, backward.start_ns, backward.end_ns);
  ASSERT_TRUE(freed.has_value());
  EXPECT_EQ(freed->end_bytes - freed->start_bytes, -1000);

  // A span inside the second step: only what overlaps it, the step begun before it too.
  const RangeBarsData part = curves(*source, b.pid(), b.at(55), b.at(65)).step_marks.ranges;
  EXPECT_EQ(bars_text(part, b), (std::vector<std::string>{
                                    "0 step 50-80 (1)",
                                    "1 forward 51-60 (1)",
                                    "1 backward 61-70 (1)",
                                }));
  EXPECT_FALSE(viewdata::allocated_between(curves(*source, b.pid(), b.at(55), b.at(65)),
                                           part.bars[0].start_ns, part.bars[0].end_ns)
                   .has_value())
      << "the step began before the span: the lines there do not hold its start";
}

TEST(RangeBarsData, RangesTooNarrowToTellApartAreOneBarThatCountsThem) {
  test::TempDir dir;
  test::RecordingBuilder b;
  // 200 ranges of 0.5 ms, 1 ms apart, then one wide range; drawn at 100 columns over 400 ms
  // (4 ms a column), the 200 are one bar, the wide one its own.
  for (int i = 0; i < 200; ++i) {
    b.range_start(i, i % 2 ? "backward" : "forward");
    b.range_end(i + 0.5, i % 2 ? "backward" : "forward");
  }
  b.range_start(250, "evaluate");
  b.range_end(350, "evaluate");
  b.malloc(400, 0x1000, 8);
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);

  const RangeBarsData far = curves(*source, b.pid(), b.at(0), b.at(400), 100).step_marks.ranges;
  EXPECT_EQ(bars_text(far, b), (std::vector<std::string>{
                                   "0 - 0-199 (200)",
                                   "0 evaluate 250-350 (1)",
                               }));
  // Zoomed in to 10 ms at 1000 columns, every range is its own bar.
  const RangeBarsData near = curves(*source, b.pid(), b.at(0), b.at(10), 1000).step_marks.ranges;
  ASSERT_EQ(near.bars.size(), 11u) << "those that begin by +10 ms";
  EXPECT_EQ(near.bars[0].name, "forward");
  EXPECT_EQ(near.bars[1].name, "backward");
  // Those of one name only keep it.
  test::TempDir dir2;
  test::RecordingBuilder same;
  for (int i = 0; i < 50; ++i) {
    same.range_start(i, "forward");
    same.range_end(i + 0.5, "forward");
  }
  same.malloc(400, 0x1000, 8);
  const std::string path2 = dir2.file("r.db");
  same.write(path2);
  auto source2 = test::open_loaded(path2);
  ASSERT_NE(source2, nullptr);
  EXPECT_EQ(bars_text(curves(*source2, same.pid(), same.at(0), same.at(400), 100).step_marks.ranges,
                      same),
            (std::vector<std::string>{"0 forward 0-49 (50)"}));
}

TEST(RangeBarsData, LanesPastThoseShownAreCountedNotDrawn) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(0, 0x1000, 8);  // the curves' span: from the first block to the last
  b.nested_ranges(0, 20, {"a", "b", "c", "d", "e"});
  b.free(30, 0x1000);
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const RangeBarsData data = curves(*source, b.pid()).step_marks.ranges;
  EXPECT_EQ(bars_text(data, b), (std::vector<std::string>{
                                    "0 a 1-20 (1)",
                                    "1 b 2-19 (1)",
                                    "2 c 3-18 (1)",
                                }));
  EXPECT_EQ(data.lanes, viewdata::kShownRangeLanes);
  EXPECT_EQ(data.deeper_lanes, 2u);
  EXPECT_EQ(data.too_deep, 0u);
}

TEST(RangeBarsData, RangesPastTheLanesKeptAreCounted) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::nested_levels(b, RangeLanes::kMaxLanes + 2);
  const std::string path = dir.file("deep.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const RangeBarsData data = curves(*source, b.pid()).step_marks.ranges;
  EXPECT_EQ(data.lanes, viewdata::kShownRangeLanes);
  EXPECT_EQ(data.deeper_lanes, RangeLanes::kMaxLanes - viewdata::kShownRangeLanes);
  EXPECT_EQ(data.too_deep, 2u);
  // Only those in the span: the two innermost end at 31 ms, the outer ones go on to 40.
  const RangeBarsData later = curves(*source, b.pid(), b.at(35), b.at(45)).step_marks.ranges;
  EXPECT_EQ(later.lanes, viewdata::kShownRangeLanes);
  EXPECT_EQ(later.too_deep, 0u);
  const RangeBarsData inside = curves(*source, b.pid(), b.at(29), b.at(45)).step_marks.ranges;
  EXPECT_EQ(inside.too_deep, 2u);
}

}  // namespace
}  // namespace memtap
