// What the report reads off the timeline: the worst fragmentation and time to OOM, for a
// steady leak, a sawtooth, a flat line, a leak that stopped, and the sources of capacity.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "monitor/engine/timeline/oom_forecast.h"
#include "monitor/engine/timeline/timeline.h"
#include "tests/unit/timeline/timeline_events.h"

namespace memtap::timeline {
namespace {

using namespace testing_events;

constexpr uint32_t kPid = 7;
constexpr int64_t MiB = 1024 * 1024, GiB = 1024 * MiB;
constexpr int64_t kMs = 1'000'000, kSecond = 1'000'000'000;
constexpr int64_t kStart = 1'700'000'000 * kSecond;  // epoch times, as recordings have

// RSS samples every 10 ms for `seconds`, valued by f(seconds since start).
template <class F>
void rss_samples(Timeline& t, double seconds, F f) {
  std::vector<MemEvent> events;
  for (int64_t i = 0; double(i) * 0.01 < seconds; ++i)
    events.push_back(snapshot_at(kStart + i * 10 * kMs, kPid, kHostDevice, f(double(i) * 0.01)));
  feed(t, events);
}

TEST(LeastSquares, FitsALineExactly) {
  std::vector<double> x = {0, 1, 2, 3}, y = {1, 3, 5, 7};
  LinearFit fit = least_squares(x, y);
  EXPECT_DOUBLE_EQ(fit.slope, 2);
  EXPECT_DOUBLE_EQ(fit.intercept, 1);
  EXPECT_DOUBLE_EQ(fit.r2, 1);
  std::vector<double> flat = {5, 5, 5, 5};
  EXPECT_EQ(least_squares(x, flat).slope, 0);
  EXPECT_EQ(least_squares(x, flat).r2, 0);
}

TEST(TimeToOom, SteadyLeakGivesTheSecondsUntilCapacity) {
  Timeline t;
  t.set_capacity(kPid, kHostDevice, GiB);
  // 100 MiB, growing 1 MiB/s for 100 s.
  rss_samples(t, 100, [](double s) { return 100 * MiB + int64_t(s * double(MiB)); });
  OomForecast f = t.time_to_oom(kPid, kHostDevice);
  ASSERT_EQ(f.status, OomStatus::kForecast) << to_string(f.status);
  EXPECT_NEAR(f.slope_bytes_per_s, double(MiB), 0.001 * double(MiB));
  EXPECT_GT(f.r2, 0.999);
  // Now at 100 + 99.99 MiB: 824.01 s of growth left.
  EXPECT_NEAR(f.seconds_to_oom, 824.01, 0.5);
  EXPECT_EQ(f.capacity_bytes, GiB);
  // The window: the last 60 s (more than 10% of 100 s).
  EXPECT_EQ(f.window_end_ns - f.window_start_ns, 60 * kSecond);
}

// A run's first second grows steadily (imports, the model's weights): a straight line
// through it would reach capacity 1,000 times further ahead than it saw. Too early.
TEST(TimeToOom, OneSecondOfGrowthIsTooEarlyForAForecastMinutesAhead) {
  Timeline t;
  t.set_capacity(kPid, kHostDevice, GiB);
  rss_samples(t, 1, [](double s) { return 100 * MiB + int64_t(s * double(MiB)); });
  OomForecast f = t.time_to_oom(kPid, kHostDevice);
  ASSERT_EQ(f.status, OomStatus::kTooEarly) << to_string(f.status);
  EXPECT_LT(f.seconds_to_oom, 0);
  EXPECT_NEAR(f.seconds_at_rate, 923.0, 1.0);  // from 101 MiB at 1 MiB/s
  EXPECT_NEAR(f.slope_bytes_per_s, double(MiB), 0.01 * double(MiB));
  // Within ten times what was seen, it is a forecast.
  t.set_capacity(kPid, kHostDevice, 105 * MiB);
  f = t.time_to_oom(kPid, kHostDevice);
  ASSERT_EQ(f.status, OomStatus::kForecast) << to_string(f.status);
  EXPECT_NEAR(f.seconds_to_oom, 4.0, 0.1);
}

// Samples near both ends of int64 (a file's times are anything): the span and the window
// saturate instead of overflowing (the sanitizer builds of this test stop on that), and the
// window ends at the last sample.
TEST(TimeToOom, TimesAtBothEndsOfInt64GiveAWindowWithinThem) {
  constexpr int64_t kLow = -9'000'000'000'000'000'000, kHigh = 9'000'000'000'000'000'000;
  Timeline t;
  t.set_capacity(kPid, kHostDevice, GiB);
  feed(t,
       {snapshot_at(kLow, kPid, kHostDevice, MiB), snapshot_at(kHigh, kPid, kHostDevice, 2 * MiB)});
  const OomForecast f = t.time_to_oom(kPid, kHostDevice);
  EXPECT_EQ(f.window_end_ns, kHigh);
  EXPECT_GE(f.window_start_ns, kLow);
  EXPECT_LE(f.window_start_ns, kHigh);
}

// A window of the whole session when the session spans all of int64: the span saturates
// at int64's top, 2^63 as a double, which converted back was undefined (and int64's bottom
// on x86, which left the 60 s minimum as the window).
TEST(TimeToOom, AWholeSessionWindowAcrossInt64IsTheWholeSpan) {
  constexpr int64_t kLow = std::numeric_limits<int64_t>::min();
  constexpr int64_t kHigh = std::numeric_limits<int64_t>::max();
  Timeline t;
  t.set_capacity(kPid, kHostDevice, GiB);
  feed(t,
       {snapshot_at(kLow, kPid, kHostDevice, MiB), snapshot_at(kHigh, kPid, kHostDevice, 2 * MiB)});
  OomOptions whole;
  whole.window_fraction = 1;
  const OomForecast f = t.time_to_oom(kPid, kHostDevice, whole);
  EXPECT_EQ(f.window_end_ns, kHigh);
  EXPECT_EQ(f.window_start_ns, 0);  // kHigh less the saturated span
}

TEST(TimeToOom, SawtoothIsNoSustainedGrowth) {
  Timeline t;
  t.set_capacity(kPid, kHostDevice, GiB);
  // Climbs 100 MiB over 10 s, drops back, ten times.
  rss_samples(t, 100, [](double s) {
    double phase = s - 10.0 * double(int64_t(s / 10.0));
    return 50 * MiB + int64_t(phase * 10.0 * double(MiB));
  });
  OomForecast f = t.time_to_oom(kPid, kHostDevice);
  EXPECT_EQ(f.status, OomStatus::kNoSustainedGrowth) << f.slope_bytes_per_s << " r2 " << f.r2;
  EXPECT_LT(f.r2, 0.8);
  EXPECT_STREQ(to_string(f.status), "no sustained growth");
}

TEST(TimeToOom, FlatIsNoSustainedGrowth) {
  Timeline t;
  t.set_capacity(kPid, kHostDevice, GiB);
  rss_samples(t, 100, [](double) { return 300 * MiB; });
  OomForecast f = t.time_to_oom(kPid, kHostDevice);
  EXPECT_EQ(f.status, OomStatus::kNoSustainedGrowth);
  EXPECT_EQ(f.slope_bytes_per_s, 0);
}

TEST(TimeToOom, OnlyRecentGrowthCounts) {
  Timeline t;
  t.set_capacity(kPid, kHostDevice, GiB);
  // Leaked for 900 s, then stopped: the last 10% (100 s) is flat.
  rss_samples(t, 1000, [](double s) { return int64_t(std::min(s, 900.0) * double(MiB) / 2); });
  EXPECT_EQ(t.time_to_oom(kPid, kHostDevice).status, OomStatus::kNoSustainedGrowth);
  OomOptions whole;
  whole.window_fraction = 1.0;
  EXPECT_EQ(t.time_to_oom(kPid, kHostDevice, whole).status, OomStatus::kForecast);
}

TEST(TimeToOom, DeviceCapacityComesFromSnapshotsAndLeakFromDriverBytes) {
  Timeline t;
  std::vector<MemEvent> events;
  // 1 MiB of cudaMalloc every 100 ms for 200 s; the device has 16 GiB.
  events.push_back(snapshot_at(kStart, kPid, 0, kUnknown, 16 * GiB));
  for (int64_t i = 0; i < 2000; ++i)
    events.push_back(
        malloc_at(kStart + i * 100 * kMs, kPid, 0, Layer::kHal, 0x1000 + uint64_t(i) * MiB, MiB));
  feed(t, events);
  OomForecast f = t.time_to_oom(kPid, 0);
  ASSERT_EQ(f.status, OomStatus::kForecast) << to_string(f.status);
  EXPECT_NEAR(f.slope_bytes_per_s, 10.0 * double(MiB), 0.01 * double(MiB));
  EXPECT_NEAR(f.seconds_to_oom, (16384.0 - 2000.0) / 10.0, 1.0);
  EXPECT_EQ(t.summary(kPid, 0).capacity_bytes, 16 * GiB);
  // The user's one capacity for every scope (memtap report --capacity-mb) wins over the
  // recording's; the caller's for this scope wins over both.
  t.set_capacity_for_all(8 * GiB);
  EXPECT_EQ(t.summary(kPid, 0).capacity_bytes, 8 * GiB);
  EXPECT_NEAR(t.time_to_oom(kPid, 0).seconds_to_oom, (8192.0 - 2000.0) / 10.0, 1.0);
  t.set_capacity(kPid, 0, 4 * GiB);
  EXPECT_NEAR(t.time_to_oom(kPid, 0).seconds_to_oom, (4096.0 - 2000.0) / 10.0, 1.0);
}

TEST(TimeToOom, UnknownCapacityStillReportsTheGrowth) {
  Timeline t;
  rss_samples(t, 100, [](double s) { return int64_t(s * double(MiB)); });
  OomForecast f = t.time_to_oom(kPid, kHostDevice);
  EXPECT_EQ(f.status, OomStatus::kNoCapacity);
  EXPECT_NEAR(f.slope_bytes_per_s, double(MiB), 0.001 * double(MiB));
  EXPECT_LT(f.seconds_to_oom, 0);
  t.set_capacity_for_all(GiB);  // what --capacity-mb 1024 gives
  EXPECT_EQ(t.time_to_oom(kPid, kHostDevice).status, OomStatus::kForecast);
}

TEST(TimeToOom, AlreadyAtCapacityIsZeroSeconds) {
  Timeline t;
  t.set_capacity(kPid, kHostDevice, 50 * MiB);
  rss_samples(t, 100, [](double s) { return int64_t(s * double(MiB)); });
  OomForecast f = t.time_to_oom(kPid, kHostDevice);
  ASSERT_EQ(f.status, OomStatus::kForecast);
  EXPECT_EQ(f.seconds_to_oom, 0);
}

TEST(TimeToOom, LeakOlderThanTheWindowIsFitFromThePyramid) {
  TimelineConfig config;
  config.curve_limits = SeriesLimits{1024, PyramidLimits{16, 64, 8}};
  Timeline t(config);
  t.set_capacity(kPid, kHostDevice, GiB);
  rss_samples(t, 100, [](double s) { return 100 * MiB + int64_t(s * double(MiB)); });
  SeriesId app = t.find({kPid, kHostDevice, Curve::kAppReserved});
  ASSERT_FALSE(t.data(app).window_covers(kStart + 40 * kSecond));
  OomForecast f = t.time_to_oom(kPid, kHostDevice);
  ASSERT_EQ(f.status, OomStatus::kForecast);
  EXPECT_NEAR(f.slope_bytes_per_s, double(MiB), 0.01 * double(MiB));
  EXPECT_NEAR(f.seconds_to_oom, 824.01, 5);
}

TEST(TimeToOom, NoScopeOrTooLittleDataIsNoData) {
  Timeline t;
  EXPECT_EQ(t.time_to_oom(1, 0).status, OomStatus::kNoData);
  feed(t, {snapshot_at(kStart, kPid, kHostDevice, MiB)});
  EXPECT_EQ(t.time_to_oom(kPid, kHostDevice).status, OomStatus::kNoData);
}

// A training process's end: its tensors are freed one by one and the caching pool keeps its
// segment, so the gap ends as wide as the segment. Nothing was asked for meanwhile: the worst
// moment is the widest gap when a block was asked for.
TEST(TimelineFragmentation, AProgramsTeardownIsNotItsWorstMoment) {
  constexpr uint64_t kSeg = 0x7f0000000000;
  Timeline t;
  feed(t, {
              malloc_at(10, kPid, 0, Layer::kHal, kSeg, 8 * MiB),
              pta(MemEventKind::kMalloc, 20, kPid, 0, kSeg, 4 * MiB, 4 * MiB, 8 * MiB),
              pta(MemEventKind::kMalloc, 30, kPid, 0, kSeg + 4 * MiB, 3 * MiB, 7 * MiB, 8 * MiB),
              pta(MemEventKind::kFree, 40, kPid, 0, kSeg + 4 * MiB, 3 * MiB, 4 * MiB, 8 * MiB),
              pta(MemEventKind::kMalloc, 50, kPid, 0, kSeg + 4 * MiB, 2 * MiB, 6 * MiB, 8 * MiB),
              pta(MemEventKind::kFree, 60, kPid, 0, kSeg, 4 * MiB, 2 * MiB, 8 * MiB),
              pta(MemEventKind::kFree, 70, kPid, 0, kSeg + 4 * MiB, 2 * MiB, 0, 8 * MiB),
          });
  FragmentationSummary f = t.summary(kPid, 0).fragmentation;
  // The gaps when blocks were asked for: 4 MiB at 20, 1 MiB at 30, 2 MiB at 50. Not the
  // segment's arrival at 10, just before its first block.
  EXPECT_EQ(f.worst_ts_ns, 20);
  EXPECT_EQ(f.worst_reserved_bytes, 8 * MiB);
  EXPECT_EQ(f.worst_allocated_bytes, 4 * MiB);
  EXPECT_EQ(f.worst_gap_bytes, 4 * MiB);
  EXPECT_EQ(f.final_gap_bytes, 8 * MiB);
}

// The worst moment is the first allocation that found the gap at its widest; the mappings
// that widened it asked nothing of the heap.
TEST(TimelineFragmentation, WorstMomentIsTheFirstAllocationAtTheWidestGap) {
  Timeline t;
  feed(t, {
              malloc_at(10, kPid, kHostDevice, Layer::kHost, 0x10, 1000),
              mmap_at(20, kPid, 0x7000, 8192, false),                      // gap 8192
              malloc_at(30, kPid, kHostDevice, Layer::kHost, 0x20, 5000),  // asked at 8192
              mmap_at(40, kPid, 0x9000, 4096, false),                      // gap 12288
              malloc_at(45, kPid, kHostDevice, Layer::kHost, 0x30, 100),   // asked at 12288: worst
              mmap_at(50, kPid, 0x9000, 4096, true),                       // 8192
              mmap_at(60, kPid, 0xb000, 4096, false),                      // 12288 again
              malloc_at(65, kPid, kHostDevice, Layer::kHost, 0x40, 100),   // not the first
              free_at(70, kPid, kHostDevice, Layer::kHost, 0x20, 5000),
          });
  FragmentationSummary f = t.summary(kPid, kHostDevice).fragmentation;
  EXPECT_EQ(f.worst_ts_ns, 45);
  EXPECT_EQ(f.worst_reserved_bytes, 6100 + 12288);
  EXPECT_EQ(f.worst_allocated_bytes, 6100);
  EXPECT_EQ(f.worst_gap_bytes, 12288);
  EXPECT_EQ(f.final_gap_bytes, 12288);
  SeriesId gap = t.find({kPid, kHostDevice, Curve::kFragmentation});
  EXPECT_EQ(t.data(gap).peak().ts_ns, 40);
}

}  // namespace
}  // namespace memtap::timeline
