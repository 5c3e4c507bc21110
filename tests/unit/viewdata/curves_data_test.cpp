// The curves the window draws, from a recording the real writer made: the engine's values
// for the range asked, Group By lines, the "others" line, and the overview.
#include "monitor/viewdata/curves_data.h"

#include <gtest/gtest.h>

#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

using viewdata::CurveLine;
using viewdata::CurvesData;
using viewdata::CurvesRequest;

const CurveLine* line_named(const CurvesData& d, const std::string& name) {
  for (const CurveLine& l : d.lines) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

TEST(CurvesData, OverallLinesFollowTheHeapAndTheResidentSet) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 100);
  b.malloc(2, 0x2000, 300);
  b.rss(3, 5000, 1 << 30);
  b.free(4, 0x1000);
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  CurvesRequest r;
  r.pid = b.pid();
  const CurvesData d = test::engine_query(
      *source, [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
  const CurveLine* allocated = line_named(d, "Allocated");
  ASSERT_NE(allocated, nullptr);
  EXPECT_EQ(allocated->peak_bytes, 400);
  EXPECT_NE(line_named(d, "Reserved"), nullptr);
  EXPECT_NE(line_named(d, "Active"), nullptr);
  EXPECT_NE(line_named(d, "App Reserved"), nullptr);
  EXPECT_EQ(line_named(d, "Fragmentation"), nullptr) << "only on demand";
  // The values in force at each moment, as the hover shows them.
  const auto at = [&](double ms) { return viewdata::values_at(d, b.at(ms))[0]; };
  EXPECT_EQ(at(1.5), 100);
  EXPECT_EQ(at(2.5), 400);
  EXPECT_EQ(at(4.5), 300);
  EXPECT_EQ(d.capacity_bytes, int64_t(1) << 30);
  ASSERT_EQ(d.overview.size(), 2u);

  r.fragmentation = true;
  const CurvesData f = test::engine_query(
      *source, [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
  EXPECT_NE(line_named(f, "Fragmentation"), nullptr);
}

TEST(CurvesData, GroupByOwnerDrawsTheLargestAndSumsTheRest) {
  test::TempDir dir;
  test::RecordingBuilder b;
  for (int i = 0; i < 5; ++i) {
    b.malloc(1 + i, 0x1000 * uint64_t(i + 1), uint64_t(1000 * (i + 1)),
             "owner" + std::to_string(i));
  }
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  CurvesRequest r;
  r.pid = b.pid();
  r.group_by = timeline::GroupBy::kOwner;
  r.max_groups = 2;
  const CurvesData d = test::engine_query(
      *source, [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
  ASSERT_EQ(d.lines.size(), 3u);
  EXPECT_EQ(d.lines[0].name, "owner4");
  EXPECT_EQ(d.lines[0].peak_bytes, 5000);
  EXPECT_EQ(d.lines[1].name, "owner3");
  EXPECT_EQ(d.lines[2].name, "(3 others)");
  EXPECT_EQ(d.lines[2].peak_bytes, 1000 + 2000 + 3000);
  EXPECT_EQ(d.hidden_groups, 3u);
}

TEST(CurvesData, ARangeShowsOnlyItsPointsAndTheOneInForce) {
  test::TempDir dir;
  test::RecordingBuilder b;
  for (int i = 0; i < 100; ++i) b.malloc(i, 0x1000 * uint64_t(i + 1), 10);
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  CurvesRequest r;
  r.pid = b.pid();
  r.t0_ns = b.at(50.5);
  r.t1_ns = b.at(60.5);
  const CurvesData d = test::engine_query(
      *source, [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
  const CurveLine* allocated = line_named(d, "Allocated");
  ASSERT_NE(allocated, nullptr);
  EXPECT_EQ(allocated->resolution, timeline::Resolution::kFull);
  // The point at 50 ms (in force at 50.5) and the ten from 51 to 60.
  ASSERT_EQ(allocated->points.size(), 11u);
  EXPECT_EQ(allocated->points.front().value_bytes, 510);
  EXPECT_EQ(allocated->points.back().value_bytes, 610);
}

}  // namespace
}  // namespace memtap

namespace memtap {
namespace {

// Older than the engine's full-resolution window (262,144 points a curve), a range is a
// min/max envelope; refine_curves reads its every point back from the recording.
TEST(CurvesData, OlderThanTheWindowTheRecordingGivesEveryPoint) {
  test::TempDir dir;
  test::RecordingBuilder b;
  constexpr int kBlocks = 300000;  // 10 us apart: 3 s
  for (int i = 0; i < kBlocks; ++i) b.malloc(i * 0.01, 0x10000 + uint64_t(i) * 64, 16);
  const std::string path = dir.file("long.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  viewdata::CurvesRequest r;
  r.pid = b.pid();
  r.t0_ns = b.at(100);  // points 10,000 to 11,000: the window begins at point ~37,856
  r.t1_ns = b.at(110);
  r.max_points = 2000;
  const viewdata::CurvesData coarse = test::engine_query(
      *source, [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
  ASSERT_TRUE(viewdata::needs_detail(coarse));
  const viewdata::CurvesData fine = viewdata::refine_curves(path, coarse, 2000);
  EXPECT_FALSE(viewdata::needs_detail(fine));
  const viewdata::CurveLine* allocated = nullptr;
  for (const viewdata::CurveLine& l : fine.lines) {
    if (l.name == "Allocated") allocated = &l;
  }
  ASSERT_NE(allocated, nullptr);
  EXPECT_TRUE(allocated->from_store);
  EXPECT_EQ(allocated->resolution, timeline::Resolution::kFull);
  // The point in force at 100 ms (block 10,000) and the 1,000 after it, each 16 B more.
  ASSERT_EQ(allocated->points.size(), 1001u);
  EXPECT_EQ(allocated->points.front().value_bytes, 10001 * 16);
  EXPECT_EQ(allocated->points.back().value_bytes, 11001 * 16);
  EXPECT_EQ(viewdata::values_at(fine, b.at(105.001))[0], 10501 * 16);
}

}  // namespace
}  // namespace memtap
