// How a curve becomes chart points: exact points as steps, an envelope as its buckets' max
// (and min for the band), buckets narrower than a pixel merged per pixel column.
#include "monitor/gui/chart_style.h"

#include <gtest/gtest.h>

namespace memtap {
namespace {

timeline::EnvelopeBucket bucket(int64_t first, int64_t last, int64_t min, int64_t max,
                                int64_t last_bytes) {
  return {first, last, min, max, last_bytes};
}

std::vector<std::pair<double, double>> xy(const QList<QPointF>& points) {
  std::vector<std::pair<double, double>> out;
  for (const QPointF& p : points) out.emplace_back(p.x() * 1e9, p.y());  // x back in ns
  return out;
}

using Points = std::vector<std::pair<double, double>>;

TEST(ChartStyle, ExactPointsAreSteps) {
  viewdata::CurveLine line;
  line.points = {{100, 5}, {300, 2}};
  EXPECT_EQ(xy(gui::step_points(line, 0, 400, 1)),
            (Points{{100, 5}, {300, 5}, {300, 2}, {400, 2}}));
}

TEST(ChartStyle, AWideBucketIsItsMaxThenItsLastValue) {
  viewdata::CurveLine line;
  line.envelope = {bucket(100, 300, 1, 9, 4), bucket(500, 700, 2, 6, 3)};
  EXPECT_EQ(
      xy(gui::step_points(line, 0, 800, 1, 50)),
      (Points{{100, 9}, {300, 9}, {300, 4}, {500, 4}, {500, 6}, {700, 6}, {700, 3}, {800, 3}}));
}

TEST(ChartStyle, ABucketAFewColumnsWideIsItsMaxThenItsLastValue) {
  viewdata::CurveLine line;
  line.envelope = {bucket(100, 300, 1, 9, 4), bucket(302, 400, 2, 6, 3)};
  // 200 ns and 98 ns at 100 ns a column: no flat top; the second follows within a column.
  EXPECT_EQ(xy(gui::step_points(line, 0, 500, 1, 100)),
            (Points{{100, 9}, {300, 4}, {302, 6}, {400, 3}, {500, 3}}));
}

TEST(ChartStyle, BucketsNarrowerThanAColumnAreMergedPerColumn) {
  viewdata::CurveLine line;
  // Ten buckets of 10 ns within 100 ns, then ten more starting 500 ns later.
  for (int i = 0; i < 10; ++i)
    line.envelope.push_back(bucket(i * 10, i * 10 + 5, i, 20 + i, 10 + i));
  for (int i = 0; i < 10; ++i)
    line.envelope.push_back(bucket(600 + i * 10, 600 + i * 10 + 5, 50 - i, 70 - i, 60 - i));
  const Points upper = xy(gui::step_points(line, 0, 1000, 1, 100));
  // A column: its greatest max, then its last value; the level holds across the gap.
  EXPECT_EQ(upper, (Points{{0, 29}, {95, 19}, {600, 19}, {600, 70}, {695, 51}, {1000, 51}}));

  QList<QPointF> hi, lo;
  gui::envelope_band(line, 0, 1000, 1, 100, &hi, &lo);
  EXPECT_EQ(xy(lo), (Points{{0, 0}, {95, 19}, {600, 19}, {600, 41}, {695, 51}, {1000, 51}}));
  EXPECT_EQ(xy(hi).front(), (std::pair<double, double>{0, 29}));

  // Without a column width every bucket keeps its own step.
  EXPECT_GT(gui::step_points(line, 0, 1000, 1, 0).size(), 60);
}

}  // namespace
}  // namespace memtap
