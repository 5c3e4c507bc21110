// The curves the window draws, from a recording the real writer made: the engine's values
// for the range asked, Group By lines, the "others" line, the overview, and which lines
// coincide.
#include "monitor/viewdata/curves_data.h"

#include <gtest/gtest.h>

#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/device_rows.h"
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

// On a GPU without a framework pool the four curves count the same driver (HAL) bytes: one
// line drawn four times, which the chart must say. The host's differ (Active equals
// Allocated there, no free being pending: not a group of its own); with a pool, Reserved and
// App Reserved (the driver's bytes) are still one line.
TEST(CurvesData, IdenticalLinesAreFoundWhereTheyCoincide) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::host_and_hal_only_gpu(b);
  const std::string path = dir.file("r.db");
  b.write(path);
  test::DeviceRows pool(b, 1);
  pool.malloc(7, "HAL", 0x7f1000000000, 20 << 20);
  pool.malloc(8, "PTA", 0x7f1000000000, 3 << 20, "weights");
  pool.append_to(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const auto curves = [&](int32_t device) {
    CurvesRequest r;
    r.pid = b.pid();
    r.device = device;
    return test::engine_query(*source,
                              [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
  };
  const CurvesData host = curves(kHostDevice);
  ASSERT_EQ(host.lines.size(), 4u);
  EXPECT_TRUE(viewdata::identical_lines(host).empty());
  EXPECT_FALSE(host.framework_pool);

  const CurvesData gpu = curves(0);
  ASSERT_EQ(gpu.lines.size(), 4u);
  EXPECT_FALSE(gpu.framework_pool);
  const std::vector<std::vector<size_t>> all = {{0, 1, 2, 3}};
  EXPECT_EQ(viewdata::identical_lines(gpu), all);

  const CurvesData with_pool = curves(1);
  ASSERT_EQ(with_pool.lines.size(), 4u);
  EXPECT_TRUE(with_pool.framework_pool);
  EXPECT_EQ(with_pool.lines[1].name, "Reserved");
  const std::vector<std::vector<size_t>> driver = {{1, 3}};  // Reserved, App Reserved
  EXPECT_EQ(viewdata::identical_lines(with_pool), driver);
}

// Active beside Allocated alone is not named while they are equal (the chart draws Active
// dashed over Allocated); where a framework block's free was pending in the range they
// differ: each is its own line, and Active may have its band.
TEST(CurvesData, ActiveApartFromAllocatedOnlyWhereAFreeWasPending) {
  using timeline::CurvePoint;
  CurvesData d;
  d.device = 0;
  d.framework_pool = true;
  const std::vector<CurvePoint> allocated = {{1, 100}, {4, 50}}, reserved = {{1, 400}};
  d.lines.resize(4);
  for (size_t i = 0; i < d.lines.size(); ++i)
    d.lines[i].name =
        std::vector<std::string>{"Allocated", "Reserved", "Active", "App Reserved"}[i];
  d.lines[0].points = allocated;
  d.lines[1].points = reserved;
  d.lines[2].points = allocated;
  d.lines[3].points = reserved;
  EXPECT_FALSE(viewdata::active_apart(d));
  const std::vector<std::vector<size_t>> driver = {{1, 3}};
  EXPECT_EQ(viewdata::identical_lines(d), driver);

  d.lines[2].points = {{1, 100}, {6, 50}};  // 50 bytes waited from 4 to 6
  EXPECT_TRUE(viewdata::active_apart(d));
  EXPECT_EQ(viewdata::identical_lines(d), driver);

  d.group_by = timeline::GroupBy::kOwner;  // no Active line in a Group By
  EXPECT_FALSE(viewdata::active_apart(d));
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

  // One group beyond the largest is drawn by its name, not as "(1 others)".
  r.max_groups = 4;
  const CurvesData all = test::engine_query(
      *source, [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
  ASSERT_EQ(all.lines.size(), 5u);
  EXPECT_EQ(all.lines[4].name, "owner0");
  EXPECT_EQ(all.lines[4].peak_bytes, 1000);
  EXPECT_EQ(all.hidden_groups, 0u);
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

// A quiet stretch older than the window: the pyramid's buckets count points, so a few
// events over 800 ms sit in one bucket with the busy times around them, and its steps (first
// point, extremes, last point) put the 10 MiB freed at 200 ms as held until the bucket's end.
// The recording holds the bucket's points: refine_curves puts them in its place.
TEST(CurvesData, AQuietStretchOlderThanTheWindowIsDrawnFromItsPoints) {
  test::TempDir dir;
  test::RecordingBuilder b;
  uint64_t addr = 0x10000;
  for (int i = 0; i < 100000; ++i) b.malloc(i * 0.001, addr += 64, 16);  // 0-100 ms
  for (int i = 0; i < 10; ++i)
    b.malloc(100 + i * 0.01, 0x7f0000000000 + uint64_t(i) * 0x200000, 1 << 20);
  for (int i = 0; i < 10; ++i) b.free(200 + i * 0.01, 0x7f0000000000 + uint64_t(i) * 0x200000);
  for (int i = 0; i < 100; ++i) b.malloc(204 + i * 8.0, addr += 64, 16);        // 204-996 ms, quiet
  for (int i = 0; i < 300000; ++i) b.malloc(1000 + i * 0.001, addr += 64, 16);  // past the window
  const std::string path = dir.file("quiet.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  viewdata::CurvesRequest r;
  r.pid = b.pid();
  r.max_points = 1000;  // the whole session, 1.3 ms a column
  const viewdata::CurvesData coarse = test::engine_query(
      *source, [&](const viewdata::EngineView& e) { return compute_curves(e, r); });
  const CurveLine* before = line_named(coarse, "Allocated");
  ASSERT_NE(before, nullptr);
  ASSERT_FALSE(before->envelope.empty());
  ASSERT_GT(before->envelope_points, viewdata::kDetailPoints);  // no whole refinement
  const int64_t at_500ms = 100000 * 16 + 38 * 16;               // the quiet mallocs at 204..500 ms
  ASSERT_GT(viewdata::values_at(coarse, b.at(500))[0], 10 << 20) << "the bucket was not wide";
  ASSERT_TRUE(viewdata::needs_detail(coarse));
  // The wide buckets end near 1 s of 1.3: about 310,000 of the 400,110 events to replay.
  const viewdata::CurvesData over_budget =
      viewdata::refine_curves(path, coarse, 1000, viewdata::kDetailPoints, 300'000);
  EXPECT_GT(viewdata::values_at(over_budget, b.at(500))[0], 10 << 20) << "replayed anyway";

  const viewdata::CurvesData fine =
      viewdata::refine_curves(path, coarse, 1000, viewdata::kDetailPoints, 320'000);
  const CurveLine* after = line_named(fine, "Allocated");
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(viewdata::values_at(fine, b.at(199))[0], 100000 * 16 + (10 << 20));
  EXPECT_EQ(viewdata::values_at(fine, b.at(500))[0], at_500ms);
  EXPECT_EQ(viewdata::values_at(fine, b.at(996.5))[0], 100100 * 16);
  EXPECT_FALSE(viewdata::needs_detail(fine));
  EXPECT_EQ(after->peak_bytes, before->peak_bytes);
  // The overview below the chart, from the same replay.
  CurvesData overview;
  overview.lines = fine.overview;
  ASSERT_FALSE(overview.lines.empty());
  EXPECT_EQ(overview.lines[0].name, "Allocated");
  EXPECT_EQ(viewdata::values_at(overview, b.at(500))[0], at_500ms);
}

}  // namespace
}  // namespace memtap
