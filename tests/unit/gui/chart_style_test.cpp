// How a curve becomes chart points: exact points as steps; an envelope's buckets as the steps
// of their first point, extremes and last point, or, narrower than a few pixels, merged per
// pixel column as its max (and min for the band).
#include "monitor/gui/chart_style.h"

#include <gtest/gtest.h>

#include <cmath>

namespace memtap {
namespace {

// A bucket whose first point is its max and whose min comes at its last point.
timeline::EnvelopeBucket bucket(int64_t first, int64_t last, int64_t min, int64_t max,
                                int64_t last_bytes) {
  return {first, last, min, max, last_bytes, max, last, first};
}

// A bucket with each of its four points given: first, min, max and last (time, value).
timeline::EnvelopeBucket m4(std::pair<int64_t, int64_t> first, std::pair<int64_t, int64_t> min,
                            std::pair<int64_t, int64_t> max, std::pair<int64_t, int64_t> last) {
  timeline::EnvelopeBucket b;
  b.t_first_ns = first.first;
  b.first_bytes = first.second;
  b.t_min_ns = min.first;
  b.min_bytes = min.second;
  b.t_max_ns = max.first;
  b.max_bytes = max.second;
  b.t_last_ns = last.first;
  b.last_bytes = last.second;
  return b;
}

std::vector<std::pair<double, double>> xy(const QList<QPointF>& points) {
  std::vector<std::pair<double, double>> out;
  for (const QPointF& p : points) out.emplace_back(std::round(p.x() * 1e9), p.y());  // x in ns
  return out;
}

using Points = std::vector<std::pair<double, double>>;

TEST(ChartStyle, ExactPointsAreSteps) {
  viewdata::CurveLine line;
  line.points = {{100, 5}, {300, 2}};
  EXPECT_EQ(xy(gui::step_points(line, 0, 400, 1)),
            (Points{{100, 5}, {300, 5}, {300, 2}, {400, 2}}));
}

TEST(ChartStyle, AWideBucketIsTheStepsOfItsFirstPointExtremesAndLastPoint) {
  viewdata::CurveLine line;
  // A drop at 120 followed by a quiet stretch to 300, then a rise to a peak at 650.
  line.envelope = {m4({100, 9}, {120, 1}, {100, 9}, {300, 1}),
                   m4({500, 2}, {500, 2}, {650, 6}, {700, 3})};
  const Points expected{{100, 9}, {120, 9}, {120, 1}, {500, 1}, {500, 2},
                        {650, 2}, {650, 6}, {700, 6}, {700, 3}, {800, 3}};
  EXPECT_EQ(xy(gui::step_points(line, 0, 800, 1, 50)), expected);
  // No band over a wide bucket: both of its edges are the steps.
  QList<QPointF> hi, lo;
  gui::envelope_band(line, 0, 800, 1, 50, &hi, &lo);
  EXPECT_EQ(xy(hi), expected);
  EXPECT_EQ(xy(lo), expected);
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

TEST(ChartStyle, AByteAxisEndsAtTheFirstRoundStepAboveItsPeak) {
  struct Case {
    double max;
    int max_intervals;
    double top, step;
  };
  for (const Case& c : {Case{524, 6, 600, 100}, Case{1.05, 6, 1.2, 0.2}, Case{10.5, 6, 12, 2},
                        Case{310, 6, 400, 100}, Case{1050, 6, 1200, 200}, Case{357, 1, 400, 400},
                        Case{504, 1, 600, 600}, Case{1.05, 1, 1.2, 1.2}, Case{9.5, 1, 10, 10},
                        Case{100, 6, 100, 20}, Case{0, 6, 1, 0.2}}) {
    SCOPED_TRACE(c.max);
    const gui::AxisSteps s = gui::nice_axis_steps(c.max, c.max_intervals);
    EXPECT_DOUBLE_EQ(s.top, c.top);
    EXPECT_DOUBLE_EQ(s.step, c.step);
    EXPECT_DOUBLE_EQ(s.intervals * s.step, s.top);
    EXPECT_LE(s.intervals, c.max_intervals);
  }
}

// The time axes' steps (1, 2, 5 times a power of ten) and the byte axes' tops alike.
TEST(ChartStyle, ATickLabelHasTheDecimalsItsStepNeeds) {
  EXPECT_EQ(gui::tick_label_decimals(100), 0);
  EXPECT_EQ(gui::tick_label_decimals(1), 0);
  EXPECT_EQ(gui::tick_label_decimals(0.5), 1);
  EXPECT_EQ(gui::tick_label_decimals(0.2), 1);
  EXPECT_EQ(gui::tick_label_decimals(1.5), 1);
  EXPECT_EQ(gui::tick_label_decimals(0.05), 2);
  EXPECT_EQ(gui::tick_label_decimals(gui::time_tick_step(0.003)), 4);  // 0.0005 s
  EXPECT_EQ(gui::tick_label_decimals(5e-9), 9);
}

// The chart's axis is set up again at every redraw: its range must depend on the peak alone.
// Qt's applyNiceNumbers() kept the tick count of the last call, and a chart first drawn
// empty showed a 499 MiB peak on a 0-500-1000 axis.
TEST(ChartStyle, AByteAxisDependsOnlyOnThePeakNotOnWhatItShowedBefore) {
  const double peak = 498.9 * 1024 * 1024;
  QValueAxis fresh;
  gui::setup_bytes_axis(&fresh, peak, "Memory");
  QValueAxis reused;
  for (double before : {1024.0, 3e9, 7.0 * 1024 * 1024, 1024.0}) {
    gui::setup_bytes_axis(&reused, before, "Memory");
  }
  gui::setup_bytes_axis(&reused, peak, "Memory");
  for (QValueAxis* axis : {&fresh, &reused}) {
    EXPECT_EQ(axis->min(), 0);
    EXPECT_DOUBLE_EQ(axis->max(), 600);  // MiB
    EXPECT_EQ(axis->tickCount(), 7);
    EXPECT_EQ(axis->titleText(), "Memory (MiB)");
    EXPECT_EQ(axis->labelFormat(), "%.0f");
  }
  gui::setup_bytes_axis(&reused, 1024, "Memory");  // an empty chart: 1 KiB in steps of 0.2
  EXPECT_DOUBLE_EQ(reused.max(), 1.2);
  EXPECT_EQ(reused.labelFormat(), "%.1f");
  gui::setup_bytes_axis(&reused, 1.4 * 1024, "Memory", 1);  // labelled 0 and 1.5 (KiB)
  EXPECT_DOUBLE_EQ(reused.max(), 1.5);
  EXPECT_EQ(reused.tickCount(), 2);
  EXPECT_EQ(reused.labelFormat(), "%.1f");
}

}  // namespace
}  // namespace memtap
