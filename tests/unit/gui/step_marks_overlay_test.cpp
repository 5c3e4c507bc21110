// The training steps, marks and OOMs over the curves, as a user sees them: a line and a
// number where each step begins, a triangle per mark, a red line at an OOM on its device;
// the hover names the step under way and what is drawn there; View > Steps, Marks and Ranges hides
// them; a long run's labels run at an even stride.
#include "monitor/gui/step_marks_overlay.h"

#include <gtest/gtest.h>

#include <QComboBox>
#include <QRegularExpression>

#include "monitor/gui/curves_panel.h"
#include "monitor/gui/lifetime_view.h"
#include "monitor/gui/top_bar.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/device_rows.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

std::string four_steps(const test::TempDir& dir, test::RecordingBuilder* b) {
  b->malloc(1, 0x1000, 100);
  for (int step = 1; step <= 4; ++step) {
    b->step(10 * step, uint64_t(step));
    b->malloc(10 * step + 1, 0x2000 + uint64_t(step) * 0x100, 64 << 10);
    b->mark(10 * step + 5, "backward");
  }
  b->malloc(50, 0x9000, 32);
  const std::string path = dir.file("steps.db");
  b->write(path);
  return path;
}

TEST(StepMarksOverlay, EachStepHasALineAndItsNumberAndEachMarkATriangle) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(four_steps(dir, &b));
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  EXPECT_EQ(chart->stepMarks().stepXs().size(), 4u);
  EXPECT_EQ(chart->stepMarks().labels(), QStringList({"step 1", "2", "3", "4"}));
  EXPECT_EQ(chart->stepMarks().marks(), 4);
  EXPECT_EQ(chart->stepMarks().oomLines(), 0);

  const QString in_step_2 = chart->hoverText(b.at(22));
  EXPECT_TRUE(
      in_step_2.startsWith("+0.022 s, step 2 (began +0.020 s; Allocated +64.0 KiB over it, "
                           "peak 128.1 KiB)\n"))
      << in_step_2.toStdString();
  EXPECT_FALSE(in_step_2.contains("mark:")) << "no mark within a few pixels";
  EXPECT_TRUE(chart->hoverText(b.at(25)).contains("\nmark: backward"));
  EXPECT_FALSE(chart->hoverText(b.at(5)).contains("step")) << "before the first step";
}

// The most a step held, which its ends do not show: each step allocates 1 MiB and frees it
// again before the next begins. The last step, still under way at the range's end, has no
// end to say what it left, but its peak so far.
TEST(StepMarksOverlay, TheHoverSaysTheMostEachStepHeld) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 100);
  for (int step = 1; step <= 3; ++step) {
    b.step(10 * step, uint64_t(step));
    b.malloc(10 * step + 1, 0x2000 + uint64_t(step) * 0x100, 64 << 10);
    b.malloc(10 * step + 2, 0x100000, 1 << 20);
    b.free(10 * step + 4, 0x100000);
  }
  const std::string path = dir.file("peaks.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  // Step 2: 64.1 KiB as it began, 1 MiB and two blocks of 64 KiB at its most.
  const QString in_step_2 = chart->hoverText(b.at(25));
  EXPECT_TRUE(
      in_step_2.contains("step 2 (began +0.020 s; Allocated +64.0 KiB over it, peak 1.1 MiB)\n"))
      << in_step_2.toStdString();
  const QString in_step_3 = chart->hoverText(b.at(33));
  EXPECT_TRUE(in_step_3.contains("step 3 (began +0.030 s; Allocated peak 1.2 MiB)\n"))
      << in_step_3.toStdString();
}

// A double-click between two step lines selects that step: from its line to the next.
TEST(StepMarksOverlay, ADoubleClickSelectsTheStepUnderThePointer) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(four_steps(dir, &b));
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  const std::vector<double> xs = chart->stepMarks().stepXs();
  ASSERT_EQ(xs.size(), 4u);
  const QRectF plot = chart->chart()->plotArea();
  const QPointF between_2_and_3((xs[1] + xs[2]) / 2, plot.center().y());
  const QPoint at = chart->mapFromScene(chart->chart()->mapToScene(between_2_and_3));
  QTest::mouseDClick(chart->viewport(), Qt::LeftButton, {}, at);
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->t0(), b.at(20));
  EXPECT_EQ(w.window->state()->t1(), b.at(30));
  EXPECT_EQ(chart->stepMarks().stepXs().size(), 2u) << "steps 2 and 3 at the range's edges";
}

// The lifetime graph below draws each step's line at the x where the curves draw it, across
// the blocks, so that a block left live by each step reads against its step.
TEST(StepMarksOverlay, TheLifetimeGraphDrawsEachStepWhereTheCurvesDo) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(four_steps(dir, &b));
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  gui::LifetimeGraph* graph = w.window->lifetime()->graph();
  ASSERT_TRUE(graph->isVisible());
  const std::vector<double> curves = chart->stepMarks().stepXs();
  const std::vector<double> lifetime = graph->stepLineXs();
  ASSERT_EQ(curves.size(), 4u);
  ASSERT_EQ(lifetime.size(), 4u);
  for (size_t i = 0; i < curves.size(); ++i) {
    const QPoint in_view = chart->mapFromScene(chart->chart()->mapToScene(QPointF(curves[i], 0)));
    const int curves_x = chart->mapTo(w.window.get(), in_view).x();
    const int lifetime_x = graph->mapTo(w.window.get(), QPoint(int(lifetime[i]), 0)).x();
    EXPECT_NEAR(lifetime_x, curves_x, 1.5) << "step " << i + 1;
  }
  EXPECT_TRUE(graph->oomLineXs().empty());

  w.window->state()->setStepMarks(false);
  EXPECT_TRUE(graph->stepLineXs().empty());
}

TEST(StepMarksOverlay, TheViewMenuHidesAndShowsThem) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(four_steps(dir, &b));
  ASSERT_TRUE(w.window);
  QMenu* view = test::menu(*w.window, "View");
  ASSERT_NE(view, nullptr);
  QAction* toggle = test::action(view, "Steps, Marks and Ranges");
  ASSERT_NE(toggle, nullptr);
  EXPECT_TRUE(toggle->isChecked());
  gui::CurvesChart* chart = w.window->curves()->chart();

  toggle->trigger();
  EXPECT_EQ(chart->stepMarks().stepXs().size(), 0u);
  EXPECT_EQ(chart->stepMarks().marks(), 0);
  EXPECT_TRUE(chart->stepMarks().labels().isEmpty());
  EXPECT_FALSE(chart->hoverText(b.at(22)).contains("step"));
  // Still hidden after the next answer is drawn.
  w.window->state()->setRange(b.at(0), b.at(29));
  test::settle(*w.window);
  EXPECT_EQ(chart->stepMarks().stepXs().size(), 0u);

  toggle->trigger();
  EXPECT_EQ(chart->stepMarks().stepXs().size(), 2u);  // steps 1 and 2 begin in +0-29 ms
  EXPECT_TRUE(chart->hoverText(b.at(22)).contains("step 2"));
}

TEST(StepMarksOverlay, AnOomIsARedLineOnItsDeviceAndTheHoverSaysWhatFailed) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::string path = dir.file("oom.db");
  test::write_oom_after_a_step(b, path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  ASSERT_EQ(w.window->state()->device(), 0);  // a process with a GPU opens on it
  gui::CurvesChart* chart = w.window->curves()->chart();
  EXPECT_EQ(chart->stepMarks().oomLines(), 1);
  EXPECT_TRUE(chart->stepMarks().labels().contains("OOM"));
  EXPECT_TRUE(chart->hoverText(b.at(4)).contains("\nOut of memory: cudaMalloc asked 8.0 MiB"))
      << chart->hoverText(b.at(4)).toStdString();
  EXPECT_EQ(w.window->lifetime()->graph()->oomLineXs().size(), 1u) << "and through the blocks";

  QComboBox* device = w.window->topBar()->deviceBox();
  const int host = device->findText("host");
  ASSERT_GE(host, 0);
  device->setCurrentIndex(host);
  emit device->activated(host);
  test::settle(*w.window);
  EXPECT_EQ(chart->stepMarks().oomLines(), 0) << "the GPU's OOM is not the host's";
  EXPECT_EQ(chart->stepMarks().labels(), QStringList({"step 1"}));
}

// A GPU run's OOM comes inside a step, often just after its line: its label goes a row
// lower rather than over the step's number, a second OOM whose label would cover the first's
// keeps only its line, and an OOM far from any step's label stays in the first row.
TEST(StepMarksOverlay, AnOomLabelNextToAStepsNumberTakesTheRowBelow) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(0, 0x1000, 4096);
  for (int step = 1; step <= 3; ++step) b.step(step, uint64_t(step));
  const std::string path = dir.file("oom_at_step.db");
  b.write(path);
  test::DeviceRows d(b, 0);
  d.malloc(0.5, "HAL", 0x7f0000000000, 2 << 20);
  // Three requests (of their own sizes: the same one refused again would be one OOM).
  d.oom(2.05, "cudaMalloc", 8 << 20, "HAL");  // about 10 px after step 2's line
  d.oom(2.08, "cudaMalloc", 16 << 20, "HAL");
  d.oom(4.5, "cudaMalloc", 32 << 20, "HAL");  // far from every label
  d.malloc(5, "HAL", 0x7f1000000000, 1 << 20);
  d.append_to(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  ASSERT_EQ(w.window->state()->device(), 0);
  const gui::StepMarksOverlay& overlay = w.window->curves()->chart()->stepMarks();
  EXPECT_EQ(overlay.oomLines(), 3);
  const QStringList labels = overlay.labels();
  ASSERT_EQ(labels, QStringList({"step 1", "2", "3", "OOM", "OOM"}))
      << labels.join(',').toStdString();
  const std::vector<QRectF> rects = overlay.labelRects();
  ASSERT_EQ(rects.size(), 5u);
  for (size_t i = 0; i < rects.size(); ++i) {
    for (size_t j = i + 1; j < rects.size(); ++j) {
      EXPECT_FALSE(rects[i].intersects(rects[j]))
          << labels[int(i)].toStdString() << " and " << labels[int(j)].toStdString() << " overlap";
    }
  }
  const QRectF& step2 = rects[1];
  const QRectF& near_oom = rects[3];
  const QRectF& far_oom = rects[4];
  EXPECT_LT(near_oom.left() - step2.right(), 12) << "the OOM's label is by its line";
  EXPECT_GE(near_oom.top(), step2.bottom() - 1) << "a row below the step's number";
  EXPECT_NEAR(far_oom.top(), step2.top(), 0.5) << "where it covers nothing, in the first row";
}

// 300 steps 1 ms apart across 1400 px: about 3 px a step. The lines are thinned to every
// 5th, and the labels run at one round stride (every 50th, say), each clear of the next.
TEST(StepMarksOverlay, ALongRunsStepsAreLabelledAtAnEvenStride) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::steps_a_millisecond_apart(b, 300);
  const std::string path = dir.file("long.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  const gui::StepMarksOverlay& overlay = w.window->curves()->chart()->stepMarks();
  const QStringList labels = overlay.labels();
  ASSERT_GE(labels.size(), 3) << labels.join(' ').toStdString();
  EXPECT_TRUE(labels[0].startsWith("step ")) << labels[0].toStdString();
  std::vector<int> numbers;
  for (QString l : labels) numbers.push_back(l.remove("step ").toInt());
  const int stride = numbers[1] - numbers[0];
  EXPECT_GT(stride, 1);
  for (size_t i = 1; i < numbers.size(); ++i) {
    EXPECT_EQ(numbers[i] - numbers[i - 1], stride) << labels.join(' ').toStdString();
    EXPECT_EQ(numbers[i] % stride, 0);
  }
  EXPECT_LE(overlay.stepXs().size(), 1400u / 8);
  EXPECT_GE(overlay.stepXs().size(), 300u / 10);
  EXPECT_TRUE(w.window->curves()->chart()->hoverText(b.at(150.5)).contains("step 150 "));
}

// More steps than the chart lists (over 4 a pixel column): the hover cannot name the step
// under way, and says which of the drawn steps the pointer lies between.
TEST(StepMarksOverlay, WhereStepsAreTooManyToNameTheHoverSaysWhichItIsBetween) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::steps_a_millisecond_apart(b, 8000);
  const std::string path = dir.file("long.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  const QString hover = chart->hoverText(b.at(4000.5));
  const QRegularExpression between(", between steps ([0-9]+) and ([0-9]+)\n");
  const QRegularExpressionMatch m = between.match(hover);
  ASSERT_TRUE(m.hasMatch()) << hover.toStdString();
  EXPECT_LE(m.captured(1).toInt(), 4000) << hover.toStdString();
  EXPECT_GT(m.captured(2).toInt(), 4000) << hover.toStdString();
  EXPECT_FALSE(hover.contains("step 4000 (")) << hover.toStdString();
}

}  // namespace
}  // namespace memtap
