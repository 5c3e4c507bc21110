// lttb() on its own: a hand-worked input, the spike it must keep, the edges of its
// contract (0, 1, 2 points; max_points 0 to 3; more buckets than points), and its speed;
// lttb_by_time's buckets of equal time on a burst and a quiet stretch.
#include "monitor/engine/timeline/lttb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace memtap::timeline {
namespace {

std::vector<double> iota_x(size_t n) {
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = double(i);
  return x;
}

TEST(Lttb, PicksTheLargestTriangleInEachBucketOfAHandWorkedInput) {
  // 7 points, 4 kept: buckets {1,2} and {3,4,5}. Bucket 1 against (0,0) and the average
  // of bucket 2 (4, 5/3): point 2 (area 16.7) beats point 1 (2.3). Bucket 2 against (2,5)
  // and the last point (6,0): point 4 (10) beats points 3 and 5 (7 each).
  std::vector<double> x = iota_x(7), y = {0, 1, 5, 2, 0, 3, 0};
  EXPECT_EQ(lttb(x, y, 4), (std::vector<size_t>{0, 2, 4, 6}));
}

TEST(Lttb, KeepsASpike) {
  std::vector<double> x = iota_x(1000), y(1000, 10.0);
  y[537] = 1e6;
  std::vector<size_t> kept = lttb(x, y, 20);
  ASSERT_EQ(kept.size(), 20u);
  EXPECT_NE(std::find(kept.begin(), kept.end(), 537u), kept.end());
}

TEST(Lttb, KeepsADipToo) {
  std::vector<double> x = iota_x(1000), y(1000, 10.0);
  y[123] = -5000;
  std::vector<size_t> kept = lttb(x, y, 7);
  EXPECT_NE(std::find(kept.begin(), kept.end(), 123u), kept.end());
}

TEST(Lttb, MonotoneLineKeepsEndpointsAndOnePointPerBucket) {
  const size_t n = 1000, m = 10;
  std::vector<double> x = iota_x(n), y = iota_x(n);
  std::vector<size_t> kept = lttb(x, y, m);
  ASSERT_EQ(kept.size(), m);
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), n - 1);
  for (size_t i = 1; i + 1 < m; ++i) {
    // Bucket i-1 of the inner points: [(i-1)*998/8 + 1, i*998/8 + 1).
    size_t begin = (i - 1) * (n - 2) / (m - 2) + 1, end = i * (n - 2) / (m - 2) + 1;
    EXPECT_GE(kept[i], begin) << i;
    EXPECT_LT(kept[i], end) << i;
  }
}

TEST(Lttb, NoPointsGiveNothing) {
  std::vector<double> none;
  EXPECT_TRUE(lttb(none, none, 0).empty());
  EXPECT_TRUE(lttb(none, none, 5).empty());
}

TEST(Lttb, OneAndTwoPoints) {
  std::vector<double> x1 = {3}, y1 = {4};
  EXPECT_EQ(lttb(x1, y1, 1), (std::vector<size_t>{0}));
  EXPECT_EQ(lttb(x1, y1, 3), (std::vector<size_t>{0}));
  EXPECT_TRUE(lttb(x1, y1, 0).empty());
  std::vector<double> x2 = {1, 2}, y2 = {5, 6};
  EXPECT_EQ(lttb(x2, y2, 2), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(lttb(x2, y2, 1), (std::vector<size_t>{0}));
}

TEST(Lttb, FewerPointsThanBucketsKeepsThemAll) {
  std::vector<double> x = iota_x(5), y = {1, 9, 2, 8, 3};
  EXPECT_EQ(lttb(x, y, 5), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(lttb(x, y, 100), (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(Lttb, MaxPointsTwoIsTheEndpointsAndThreeAddsTheBiggestTriangle) {
  std::vector<double> x = iota_x(10), y = {0, 1, 0, 1, 9, 1, 0, 1, 0, 0};
  EXPECT_EQ(lttb(x, y, 2), (std::vector<size_t>{0, 9}));
  EXPECT_EQ(lttb(x, y, 3), (std::vector<size_t>{0, 4, 9}));
  EXPECT_TRUE(lttb(x, y, 0).empty());
  EXPECT_EQ(lttb(x, y, 1), (std::vector<size_t>{0}));
}

// A step curve in a burst and a quiet stretch: 10,000 points in the first 1% of the time,
// a drop to 0 at 1 s, then 10 points 10 s apart. In 102 equal-count buckets the quiet
// stretch shares one bucket with the burst's end; in equal-time buckets each quiet point is
// a bucket of its own, and the drop is kept within a bucket (1 s) of its time.
TEST(Lttb, ByTimeKeepsAQuietStretchAndItsDrop) {
  std::vector<double> x, y;
  for (int i = 0; i < 10000; ++i) {
    x.push_back(i * 1e-4);  // 0 .. 1 s
    y.push_back(500);
  }
  for (int i = 0; i < 10; ++i) {
    x.push_back(1.0 + i * 10.0);
    y.push_back(i == 0 ? 0 : 1 + i);
  }
  const std::vector<size_t> by_count = lttb(x, y, 102);
  size_t quiet_by_count = 0;
  for (size_t k : by_count) quiet_by_count += k >= 10000;
  EXPECT_LT(quiet_by_count, 10u);  // what the chart lost

  const std::vector<size_t> kept = lttb_by_time(x, y, 102);
  EXPECT_LE(kept.size(), 102u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), x.size() - 1);
  for (size_t k = 10000; k < x.size(); ++k)
    EXPECT_NE(std::find(kept.begin(), kept.end(), k), kept.end()) << "quiet point " << k;
}

TEST(Lttb, ByTimeWithEvenlySpacedPointsIsOnePointPerBucket) {
  const size_t n = 1000, m = 10;
  std::vector<double> x = iota_x(n), y = iota_x(n);
  std::vector<size_t> kept = lttb_by_time(x, y, m);
  ASSERT_EQ(kept.size(), m);
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), n - 1);
  for (size_t i = 1; i + 1 < m; ++i) {
    // Bucket i-1 spans x in [(i-1) * 999/8, i * 999/8), inner points only.
    EXPECT_GE(double(kept[i]), double(i - 1) * 999.0 / 8) << i;
    EXPECT_LT(double(kept[i]), double(i) * 999.0 / 8) << i;
  }
  std::vector<double> same(5, 3.0), v = {1, 9, 2, 8, 3};
  EXPECT_EQ(lttb_by_time(same, v, 4).size(), 3u);  // no time: one bucket
  EXPECT_EQ(lttb_by_time(same, v, 2), (std::vector<size_t>{0, 4}));
}

TEST(Lttb, Throughput10MillionPointsTo2000) {
  const size_t n = 10'000'000;
  std::vector<double> x(n), y(n);
  uint64_t state = 42;
  for (size_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = double(i) * 1000.0;
    y[i] = double(i / 1000) + double(state >> 44);
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<size_t> kept = lttb(x, y, 2000);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("lttb: 10,000,000 points -> %zu in %.1f ms\n", kept.size(), ms);
  ASSERT_EQ(kept.size(), 2000u);
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), n - 1);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
}

}  // namespace
}  // namespace memtap::timeline
