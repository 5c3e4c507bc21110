// One series on its own: the full-resolution window, the min/max pyramid, and the range
// queries over them, checked against a brute-force scan of every point ever appended.
#include "monitor/engine/timeline/series.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace memtap::timeline {
namespace {

// Tiny limits so that a few thousand points roll the window, fill every level's ring and
// merge the top several times.
SeriesLimits tiny() {
  return SeriesLimits{8, PyramidLimits{2, 4, 3}};
}

TEST(PointWindow, KeepsTheNewestPointsAndNumbersThemFromTheStart) {
  PointWindow w(8);
  for (int i = 0; i < 20; ++i) w.push(i * 10, i);
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w.first_index(), 12u);
  EXPECT_EQ(w.at(0).ts_ns, 120);
  EXPECT_EQ(w.at(7).value_bytes, 19);
  EXPECT_EQ(w.at_index(15).value_bytes, 15);
  EXPECT_EQ(w.upper_bound(125), 1u);
  EXPECT_EQ(w.upper_bound(119), 0u);
  EXPECT_EQ(w.upper_bound(1000), 8u);
  EXPECT_LE(w.memory_bytes(), PointWindow::bound_bytes(8));
}

TEST(MinMaxPyramid, TopKeepsAllHistoryAndHalvesItsResolutionWhenFull) {
  MinMaxPyramid p(PyramidLimits{2, 4, 3});  // buckets of 2, 4, then 8+ points
  for (int i = 0; i < 64; ++i) p.add(i, i % 7 == 3 ? 100 : i);
  const size_t top = p.top();
  EXPECT_EQ(p.first_bucket(top), 0u);
  // 64 points: the top closed 8 buckets of 8, merged to 4 of 16 when it reached 4, and so
  // on: 64 = 4 buckets of 16 would be full, so it merged again into 2 of 32.
  EXPECT_EQ(p.points_per_bucket(top) * p.end_bucket(top), 64u);
  EXPECT_LT(p.end_bucket(top), 4u);
  // The union of the top's buckets is the whole history's envelope.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (uint64_t k = 0; k < p.end_bucket(top); ++k) {
    lo = std::min(lo, p.bucket(top, k).min_bytes);
    hi = std::max(hi, p.bucket(top, k).max_bytes);
  }
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 100);
  // Level 0 keeps only its newest 4 buckets of 2 points: points 56..63.
  EXPECT_EQ(p.first_bucket(0), 28u);
  EXPECT_EQ(p.bucket(0, 31).t_first_ns, 62);
  EXPECT_EQ(p.bucket(0, 31).last_bytes, 63);
  EXPECT_LE(p.memory_bytes(), MinMaxPyramid::bound_bytes(PyramidLimits{2, 4, 3}));
}

TEST(TimelineSeries, QueryInsideTheWindowGivesEveryPointFromTheOneInForce) {
  Series s(SeriesLimits{64, PyramidLimits{4, 8, 3}});
  for (int i = 0; i < 10; ++i) s.append(100 + i * 10, i * i);
  CurveQuery q = s.query(125, 150, 100);
  EXPECT_EQ(q.resolution, Resolution::kFull);
  ASSERT_EQ(q.points.size(), 4u);  // 120 (in force at 125), 130, 140, 150
  EXPECT_EQ(q.points[0].ts_ns, 120);
  EXPECT_EQ(q.points[0].value_bytes, 4);
  EXPECT_EQ(q.points[3].value_bytes, 25);
  EXPECT_TRUE(s.query(50, 90, 100).points.empty());    // before the first point
  EXPECT_TRUE(s.query(150, 140, 100).points.empty());  // t1 < t0
}

TEST(TimelineSeries, QueryWithMorePointsThanAskedIsDownsampledByLttb) {
  Series s(SeriesLimits{4096, PyramidLimits{4, 8, 3}});
  for (int i = 0; i < 1000; ++i) s.append(i, i == 500 ? 1'000'000 : i % 3);
  CurveQuery q = s.query(0, 999, 50);
  EXPECT_EQ(q.resolution, Resolution::kLttb);
  ASSERT_EQ(q.points.size(), 50u);
  EXPECT_EQ(q.points.front().ts_ns, 0);
  EXPECT_EQ(q.points.back().ts_ns, 999);
  bool spike = false;
  for (const CurvePoint& p : q.points) spike |= p.value_bytes == 1'000'000;
  EXPECT_TRUE(spike);
}

TEST(TimelineSeries, OldRangesAreAnsweredFromThePyramidOnceTheWindowRolled) {
  Series s(tiny());
  for (int i = 0; i < 1000; ++i) s.append(i * 10, i == 333 ? 5000 : i % 10);
  EXPECT_FALSE(s.window_covers(3000));
  CurveQuery q = s.query(3000, 3500, 16);
  EXPECT_EQ(q.resolution, Resolution::kEnvelope);
  ASSERT_FALSE(q.envelope.empty());
  EXPECT_LE(q.envelope.size(), 16u);
  EXPECT_LE(q.envelope.front().t_first_ns, 3000);
  int64_t hi = INT64_MIN, lo = INT64_MAX;
  for (const EnvelopeBucket& b : q.envelope) {
    hi = std::max(hi, b.max_bytes);
    lo = std::min(lo, b.min_bytes);
  }
  EXPECT_EQ(hi, 5000);  // the spike at point 333 (t = 3330)
  EXPECT_EQ(lo, 0);
}

TEST(TimelineSeries, EnvelopeUsesTheFinestLevelThatStillHoldsTheRange) {
  // Level 0 (buckets of 4 points, 64 kept) holds the last 256 points; the window only 16.
  Series s(SeriesLimits{16, PyramidLimits{4, 64, 4}});
  for (int i = 0; i < 1000; ++i) s.append(i * 10, i);
  std::vector<EnvelopeBucket> env = s.envelope(7600, 8000, 100);  // points 760..800
  ASSERT_EQ(env.size(), 11u);                                     // buckets 190..200 of level 0
  for (const EnvelopeBucket& b : env) EXPECT_EQ(b.t_last_ns - b.t_first_ns, 30);
  EXPECT_EQ(env.front().t_first_ns, 7600);
  EXPECT_EQ(env.back().max_bytes, 803);
  // Too many level-0 buckets for 5 points: level 2 (16 points a bucket) fits.
  env = s.envelope(7600, 8000, 5);
  ASSERT_LE(env.size(), 5u);
  EXPECT_EQ(env.front().t_last_ns - env.front().t_first_ns, 150);
}

// Buckets count points: where the curve was quiet, a coarse bucket spans much of the range,
// and its band claimed the min of a drop that came at its very end over all that time (the
// leak example's Allocated drawn at 60 MiB for 0.5 s before it fell from 550 MiB). Such a
// bucket is split into the finer levels' buckets that the pyramid still holds.
TEST(TimelineSeries, AWideBucketIsSplitWhereFinerLevelsHoldIt) {
  Series s(SeriesLimits{16, PyramidLimits{4, 64, 4}});  // level 0 holds the last 256 points
  int64_t t = 0;
  for (int i = 0; i < 400; ++i) s.append(t++, 100);  // busy
  const int64_t quiet_from = t;
  for (int i = 0; i < 12; ++i, t += 1000) s.append(t, 500);  // quiet: 12 points, 12,000 ns
  const int64_t drop = t;
  for (int i = 0; i < 188; ++i) s.append(t++, 0);  // busy again, after a drop to 0
  // 600 points in 20 slots: level 3 (32 points a bucket) is the finest that fits, and its
  // bucket of points 384..415 runs from the busy stretch across the quiet one to the drop.
  const std::vector<EnvelopeBucket> env = s.envelope(0, t, 20);
  ASSERT_LE(env.size(), 20u);
  size_t quiet_buckets = 0;
  for (const EnvelopeBucket& b : env) {
    if (b.t_first_ns < quiet_from || b.t_first_ns >= drop) continue;
    ++quiet_buckets;
    EXPECT_EQ(b.min_bytes, 500) << "a bucket from " << b.t_first_ns << " claims the drop";
    EXPECT_EQ(b.max_bytes, 500);
  }
  EXPECT_GE(quiet_buckets, 2u);
  // Without a finer level to split into, the wide bucket stays whole: nothing is lost.
  Series coarse(SeriesLimits{4, PyramidLimits{32, 4, 1}});
  t = 0;
  for (int i = 0; i < 400; ++i) coarse.append(t++, 100);
  for (int i = 0; i < 12; ++i, t += 1000) coarse.append(t, 500);
  for (int i = 0; i < 188; ++i) coarse.append(t++, 0);
  int64_t lowest = INT64_MAX;
  for (const EnvelopeBucket& b : coarse.envelope(0, t, 20)) lowest = std::min(lowest, b.min_bytes);
  EXPECT_EQ(lowest, 0);
}

// Level 0's buckets cannot be split: 256 points of a quiet stretch can span much of a
// chart (the fragmentation example's pool unmapped in 25 ms, then 100 ms with ~200 events
// in one bucket, drawn as still reserved). The bucket keeps when its extremes came.
TEST(TimelineSeries, ABucketKeepsWhenItsValueDroppedInsideIt) {
  Series s(SeriesLimits{8, PyramidLimits{8, 4, 1}});
  int64_t t = 0;
  for (int i = 0; i < 3; ++i) s.append(t += 10, 480);
  const int64_t drop = t += 10;
  s.append(drop, 100);
  for (int i = 0; i < 4; ++i) s.append(t += 1000, 100);  // quiet: the bucket ends at 4050
  for (int i = 0; i < 16; ++i) s.append(t += 10, 50);    // busy: the window rolls past
  ASSERT_FALSE(s.window_covers(0));
  const std::vector<EnvelopeBucket> env = s.envelope(0, drop + 100, 4, WideBuckets::kKeep);
  ASSERT_FALSE(env.empty());
  const EnvelopeBucket& b = env.front();
  ASSERT_EQ(b.t_first_ns, 10);
  ASSERT_EQ(b.t_last_ns, drop + 4000);
  EXPECT_EQ(b.first_bytes, 480);
  EXPECT_EQ(b.t_max_ns, 10);
  EXPECT_EQ(b.t_min_ns, drop);
  EXPECT_EQ(bucket_value_at(b, drop - 1), 480);
  EXPECT_EQ(bucket_value_at(b, drop), 100);
  EXPECT_EQ(bucket_value_at(b, drop + 2000), 100);
  const BucketSteps steps = bucket_steps(b);
  ASSERT_EQ(steps.count, 3);  // the first point is the max
  EXPECT_EQ(steps.steps[1].ts_ns, drop);
  EXPECT_EQ(steps.steps[2].value_bytes, 100);
}

TEST(TimelineSeries, PeakIsTheFirstMomentOfTheHighestValueEvenAfterTheWindowRolled) {
  Series s(tiny());
  for (int i = 0; i < 500; ++i) s.append(i, i == 40 || i == 90 ? 777 : 1);
  EXPECT_EQ(s.peak().ts_ns, 40);
  EXPECT_EQ(s.peak().value_bytes, 777);
  EXPECT_EQ(s.value(), 1);
}

// Every envelope, for many ranges and sizes, against a scan of all points: the buckets cover
// consecutive runs of points, none skipped, from the run holding the point in force at t0
// to the run holding the last point at or before t1 (a coarse bucket may reach past either
// end, never stop short); there are no more buckets than asked; each bucket's first value,
// min and max with the time each was first reached, and last value are those of its run.
TEST(TimelineSeries, EnvelopeMatchesBruteForceOnRandomRangesAtEveryStage) {
  std::mt19937_64 rng(7);
  auto index_after = [](const std::vector<CurvePoint>& all, int64_t t) {
    return size_t(std::upper_bound(all.begin(), all.end(), t,
                                   [](int64_t x, const CurvePoint& p) { return x < p.ts_ns; }) -
                  all.begin());
  };
  for (SeriesLimits limits : {tiny(), SeriesLimits{16, PyramidLimits{4, 6, 4}},
                              SeriesLimits{4, PyramidLimits{1, 4, 1}}}) {
    Series s(limits);
    std::vector<CurvePoint> all;
    int64_t t = 1000, v = 0;
    for (int n = 0; n < 3000; ++n) {
      t += 1 + int64_t(rng() % 50);
      v = std::max<int64_t>(0, v + int64_t(rng() % 201) - 100);
      if (rng() % 97 == 0) v += 100000;  // a spike now and then
      s.append(t, v);
      all.push_back({t, v});
      if (n % 37 != 0) continue;
      for (int q = 0; q < 20; ++q) {
        int64_t a = 900 + int64_t(rng() % uint64_t(t - 800));
        int64_t b = a + int64_t(rng() % uint64_t(t - a + 200));
        size_t max_points = 1 + rng() % 40;
        std::vector<EnvelopeBucket> env = s.envelope(a, b, max_points);
        size_t begin = index_after(all, a);  // the point in force at a, or the first
        if (begin > 0) --begin;
        size_t end = index_after(all, b);
        if (begin >= end) {
          EXPECT_TRUE(env.empty());
          continue;
        }
        SCOPED_TRACE(testing::Message()
                     << "range " << a << ".." << b << " max " << max_points << " after "
                     << all.size() << " points, window " << limits.window_points);
        ASSERT_FALSE(env.empty());
        ASSERT_LE(env.size(), max_points);
        ASSERT_LE(env.front().t_first_ns, all[begin].ts_ns);
        ASSERT_GE(env.front().t_last_ns, all[begin].ts_ns);
        ASSERT_LE(env.back().t_first_ns, b);
        size_t i = index_after(all, env.front().t_first_ns) - 1;
        for (const EnvelopeBucket& bucket : env) {
          ASSERT_LT(i, all.size());
          ASSERT_EQ(all[i].ts_ns, bucket.t_first_ns) << "gap or overlap before a bucket";
          ASSERT_EQ(bucket.first_bytes, all[i].value_bytes);
          int64_t lo = INT64_MAX, hi = INT64_MIN, t_lo = 0, t_hi = 0;
          while (i < all.size() && all[i].ts_ns <= bucket.t_last_ns) {
            if (all[i].value_bytes < lo) lo = all[i].value_bytes, t_lo = all[i].ts_ns;
            if (all[i].value_bytes > hi) hi = all[i].value_bytes, t_hi = all[i].ts_ns;
            ++i;
          }
          ASSERT_EQ(bucket.min_bytes, lo);
          ASSERT_EQ(bucket.max_bytes, hi);
          // Each extreme at the time it was first reached.
          ASSERT_EQ(bucket.t_min_ns, t_lo);
          ASSERT_EQ(bucket.t_max_ns, t_hi);
          ASSERT_EQ(bucket.last_bytes, all[i - 1].value_bytes);
        }
        ASSERT_GE(i, end) << "points before t1 after the last bucket";
      }
    }
    EXPECT_LE(s.memory_bytes(), Series::bound_bytes(limits));
  }
}

TEST(TimelineSeries, DownsamplePointsKeepsFewPointsAsTheyAre) {
  std::vector<CurvePoint> pts = {{1, 1}, {2, 5}, {3, 2}};
  CurveQuery q = downsample_points(pts, 3);
  EXPECT_EQ(q.resolution, Resolution::kFull);
  EXPECT_EQ(q.points.size(), 3u);
  q = downsample_points(pts, 2);
  EXPECT_EQ(q.resolution, Resolution::kLttb);
  ASSERT_EQ(q.points.size(), 2u);
  EXPECT_EQ(q.points[1].ts_ns, 3);
}

TEST(TimelineSeries, SampleStepReadsTheValueInForce) {
  CurveQuery q;
  q.points = {{10, 1}, {20, 2}, {30, 3}};
  std::vector<double> v = sample_step(q, 0, 40, 5);  // at 0, 10, 20, 30, 40
  EXPECT_EQ(v, (std::vector<double>{1, 1, 2, 3, 3}));
  q.resolution = Resolution::kEnvelope;
  q.envelope = {{10, 15, 0, 9, 4}, {20, 29, 4, 8, 6}};
  v = sample_step(q, 10, 30, 3);  // at 10, 20, 30
  EXPECT_EQ(v, (std::vector<double>{4, 6, 6}));
}

}  // namespace
}  // namespace memtap::timeline
