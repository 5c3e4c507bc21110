// The ranges along the bottom of the curves, as a user sees them: a bar per range with its
// name, nested ranges in a row above their outer one, many narrow ranges one bar that
// counts them; the hover names each range under the pointer with what Allocated did over
// it; a double-click on a bar selects that range; View > Steps, Marks and Ranges hides them.
#include "monitor/gui/range_bars_overlay.h"

#include <gtest/gtest.h>

#include "monitor/gui/curves_panel.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

// Two training steps of 40 ms as ranges, each with forward (which leaves 64 KiB live) and
// backward (which frees it) inside.
std::string two_steps(const test::TempDir& dir, test::RecordingBuilder* b) {
  b->malloc(1, 0x1000, 100);
  for (int step = 0; step < 2; ++step) {
    const double t = 10 + 40 * step;
    const uint64_t block = 0x2000 + uint64_t(step) * 0x100;
    b->range_start(t, "train_step");
    b->range_start(t + 1, "forward");
    b->malloc(t + 2, block, 64 << 10);
    b->range_end(t + 15, "forward");
    b->range_start(t + 16, "backward");
    b->free(t + 17, block);
    b->range_end(t + 30, "backward");
    b->range_end(t + 35, "train_step");
  }
  b->malloc(100, 0x9000, 32);
  const std::string path = dir.file("ranges.db");
  b->write(path);
  return path;
}

TEST(RangeBarsOverlay, EachRangeIsABarWithItsNameAndNestedOnesStackAbove) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(two_steps(dir, &b));
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  const gui::RangeBarsOverlay& bars = chart->rangeBars();
  EXPECT_EQ(bars.labels(), QStringList({"train_step", "train_step", "forward", "backward",
                                        "forward", "backward"}));
  const std::vector<QRectF> rects = bars.barRects();
  ASSERT_EQ(rects.size(), 6u);
  const QRectF plot = chart->chart()->plotArea();
  EXPECT_NEAR(rects[0].bottom(), plot.bottom(), 2) << "the outermost row at the plot's bottom";
  EXPECT_LT(rects[2].bottom(), rects[0].top() + 1) << "forward's row above train_step's";
  EXPECT_LE(rects[0].left(), rects[2].left());
  EXPECT_GE(rects[0].right(), rects[3].right()) << "a step's bar spans what is inside it";
  EXPECT_LT(rects[2].right(), rects[3].left());

  // The hover: the step's range, then forward inside it, with what each left live.
  const QString in_forward = chart->hoverText(b.at(20));
  EXPECT_TRUE(
      in_forward.contains("\nrange train_step: +0.010 s to +0.045 s (35.0 ms); "
                          "Allocated +0 B over it\nrange forward: +0.011 s to +0.025 s "
                          "(14.0 ms); Allocated +64.0 KiB over it"))
      << in_forward.toStdString();
  EXPECT_TRUE(
      chart->hoverText(b.at(35)).contains("range backward: +0.026 s to +0.040 s (14.0 "
                                          "ms); Allocated -64.0 KiB over it"))
      << chart->hoverText(b.at(35)).toStdString();
  EXPECT_FALSE(chart->hoverText(b.at(47)).contains("range")) << "between the steps";
  EXPECT_EQ(bars.hiddenLabel(), QString()) << "every range is drawn";
  EXPECT_FALSE(in_forward.contains("not drawn")) << in_forward.toStdString();
}

// Ten ranges nested in each other: three rows are drawn, and the window says what it left
// out (five lanes it keeps but does not draw, two ranges deeper than it keeps at all), above
// the top row and in the hover over a bar; zoomed in, what the span holds.
TEST(RangeBarsOverlay, RangesNestedDeeperThanTheRowsAreSaid) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::nested_levels(b, 10);
  const std::string path = dir.file("deep.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  const gui::RangeBarsOverlay& bars = chart->rangeBars();
  EXPECT_EQ(bars.labels(), QStringList({"level0", "level1", "level2"}));
  const QString said = "+5 nested lanes not drawn; +2 ranges nested past 8 levels not kept";
  EXPECT_EQ(bars.hiddenLabel(), said);
  const QString hover = chart->hoverText(b.at(20));
  EXPECT_TRUE(hover.contains("range level2: ") && hover.contains('\n' + said))
      << hover.toStdString();

  // Zoomed in, only what the span holds: the innermost range ends at 31 ms, the one around
  // it at 32, and the outer ones at 33 to 40.
  w.window->state()->setRange(b.at(31.5), b.at(35));
  test::settle(*w.window);
  EXPECT_EQ(bars.hiddenLabel(),
            "+5 nested lanes not drawn; +1 range nested past 8 levels not kept");
  w.window->state()->setRange(b.at(36.5), b.at(45));
  test::settle(*w.window);
  EXPECT_EQ(bars.hiddenLabel().toStdString(), "+1 nested lane not drawn");

  // In the narrowest window, with a large font, shorter, and within the plot (not over the
  // axis at its left).
  w.window->state()->setRange(w.window->state()->origin(), w.window->state()->sessionEnd());
  QFont large = chart->chart()->font();
  large.setPointSizeF(large.pointSizeF() * 1.6);
  chart->chart()->setFont(large);
  w.window->resize(300, 500);
  test::settle(*w.window);
  const QRectF plot = chart->chart()->plotArea();
  ASSERT_FALSE(bars.hiddenLabel().isEmpty());
  EXPECT_GE(bars.hiddenRect().left(), plot.left())
      << bars.hiddenLabel().toStdString() << " in a plot " << plot.width() << " px wide";
  EXPECT_LE(bars.hiddenRect().right(), plot.right());
}

TEST(RangeBarsOverlay, ADoubleClickOnABarSelectsThatRange) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(two_steps(dir, &b));
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  const std::vector<QRectF> rects = chart->rangeBars().barRects();
  ASSERT_EQ(rects.size(), 6u);
  // The second step's backward (the last bar of the upper row).
  const QPoint at = chart->mapFromScene(chart->chart()->mapToScene(rects[5].center()));
  QTest::mouseDClick(chart->viewport(), Qt::LeftButton, {}, at);
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->t0(), b.at(66));
  EXPECT_EQ(w.window->state()->t1(), b.at(80));
  EXPECT_EQ(chart->rangeBars().labels(), QStringList({"train_step", "backward"}));
}

TEST(RangeBarsOverlay, ManyNarrowRangesAreOneBarThatCountsThem) {
  test::TempDir dir;
  test::RecordingBuilder b;
  for (int i = 0; i < 300; ++i) {
    b.range_start(i, "forward");
    b.range_end(i + 0.4, "forward");
  }
  b.malloc(0, 0x1000, 8);
  b.free(1000, 0x1000);
  const std::string path = dir.file("narrow.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  EXPECT_EQ(chart->rangeBars().barRects().size(), 1u);
  EXPECT_EQ(chart->rangeBars().labels(), QStringList({QStringLiteral("forward \u00d7300")}));
  EXPECT_TRUE(chart->hoverText(b.at(100)).contains(
      QStringLiteral("\nforward \u00d7300, +0.000 s to +0.299 s: zoom in to tell them apart")))
      << chart->hoverText(b.at(100)).toStdString();
}

// A bar too narrow for its words keeps its count: "44 r…" said neither what nor how many.
TEST(RangeBarsOverlay, ANarrowGroupsLabelKeepsItsCount) {
  const QFontMetricsF m{QFont()};
  viewdata::RangeBar several;
  several.ranges = 44;
  viewdata::RangeBar forward;
  forward.name = "forward";
  forward.ranges = 12;
  viewdata::RangeBar one;
  one.name = "optimizer";
  one.ranges = 1;
  const auto label = [&](const viewdata::RangeBar& b, const QString& fits) {
    return gui::RangeBarsOverlay::barLabel(b, m.horizontalAdvance(fits), m);
  };
  EXPECT_EQ(label(several, "44 ranges"), "44 ranges");
  EXPECT_EQ(label(several, "44 ra"), "44");
  EXPECT_EQ(label(several, "4"), "");
  EXPECT_EQ(label(forward, QStringLiteral("forward \u00d712")), QStringLiteral("forward \u00d712"));
  const QString cut = label(forward, QStringLiteral("forw \u00d712"));
  EXPECT_TRUE(cut.endsWith(QStringLiteral("\u2026 \u00d712"))) << cut.toStdString();
  EXPECT_EQ(label(forward, QStringLiteral("\u00d712")), QStringLiteral("\u00d712"));
  EXPECT_EQ(label(one, "optimizer"), "optimizer");
  EXPECT_TRUE(label(one, "optim").endsWith(QStringLiteral("\u2026")));
  EXPECT_EQ(label(one, "o"), "");
}

TEST(RangeBarsOverlay, TheViewMenuHidesThemWithTheSteps) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(two_steps(dir, &b));
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  ASSERT_EQ(chart->rangeBars().barRects().size(), 6u);
  w.window->state()->setStepMarks(false);
  EXPECT_TRUE(chart->rangeBars().barRects().empty());
  EXPECT_TRUE(chart->rangeBars().labels().isEmpty());
  EXPECT_FALSE(chart->hoverText(b.at(20)).contains("range"));
  w.window->state()->setStepMarks(true);
  EXPECT_EQ(chart->rangeBars().barRects().size(), 6u);
}

}  // namespace
}  // namespace memtap
