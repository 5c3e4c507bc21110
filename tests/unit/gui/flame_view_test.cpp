// The flame chart in the window, driven as a user drives it: it draws the trace's boxes for
// the range, a search outlines the matches and counts them, a range change reads again, a
// click on a box zooms every view to it and Back returns, its time axis lines up with the
// curves' plot area, and a stack deeper than the chart is tall scrolls to its deepest frame.
#include "monitor/gui/flame_view.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QImage>
#include <QScrollBar>
#include <QTest>
#include <QWheelEvent>
#include <algorithm>
#include <string>

#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

std::string trace_recording(const test::TempDir& dir, test::RecordingBuilder* b) {
  b->slice(0, 100, "main.py(1): main");
  b->slice(10, 30, "main.py(5): train_step");
  b->slice(12, 20, "model.py(20): forward");
  b->slice(60, 90, "main.py(5): train_step");
  b->slice(62, 70, "model.py(20): forward");
  b->malloc(1, 0x1000, 1000);
  b->malloc(101, 0x2000, 1000);
  const std::string path = dir.file("trace.db");
  b->write(path);
  return path;
}

// The window over `path` with the flame chart in front, its first answers drawn.
test::OpenWindow open_flame(const std::string& path) {
  test::OpenWindow w = test::open_window(path);
  if (!w.window) return w;
  w.window->showView("flame");
  test::settle(*w.window);
  return w;
}

int function_spans(const viewdata::FlameData& d, const std::string& name) {
  int n = 0;
  for (const viewdata::FlameSpan& s : d.spans) n += d.functions.at(s.function).function == name;
  return n;
}

TEST(FlameView, DrawsTheTraceOfTheRange) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_flame(trace_recording(dir, &b));
  ASSERT_TRUE(w.window);
  gui::FlameCanvas* canvas = w.window->flame()->canvas();
  ASSERT_EQ(canvas->data().source, viewdata::FlameSource::kTrace);
  canvas->grab();  // paints
  EXPECT_EQ(canvas->boxesDrawn(), 5);
  EXPECT_TRUE(w.window->flame()->sourceText().contains("python_trace_100"))
      << w.window->flame()->sourceText().toStdString();
  // Hovering a box tells its function, file:line and duration.
  size_t forward = 0;
  while (canvas->data().functions[canvas->data().spans[forward].function].function != "forward")
    ++forward;
  const QString tip = canvas->toolTipFor(forward);
  EXPECT_TRUE(tip.contains("forward")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("model.py:20")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("8.0 ms") || tip.contains("8 ms")) << tip.toStdString();
}

TEST(FlameView, SearchOutlinesTheMatchesAndCountsThem) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_flame(trace_recording(dir, &b));
  ASSERT_TRUE(w.window);
  gui::FlameView* flame = w.window->flame();
  QTest::keyClicks(flame->searchBox(), "FORW");
  EXPECT_EQ(flame->matchText().toStdString(), "2 matches, total 0.016 s");
  flame->canvas()->grab();
  EXPECT_EQ(flame->canvas()->matchesDrawn(), 2);
  flame->searchBox()->clear();
  EXPECT_EQ(flame->matchText().toStdString(), "");
  flame->canvas()->grab();
  EXPECT_EQ(flame->canvas()->matchesDrawn(), 0);
}

TEST(FlameView, ARangeChangeReadsTheSlicesOfTheNewRange) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_flame(trace_recording(dir, &b));
  ASSERT_TRUE(w.window);
  gui::FlameView* flame = w.window->flame();
  const int reads = flame->reads();
  ASSERT_EQ(function_spans(flame->canvas()->data(), "train_step"), 2);
  w.window->state()->setRange(b.at(50), b.at(95));
  test::settle(*w.window);
  EXPECT_GT(flame->reads(), reads);
  EXPECT_EQ(flame->canvas()->data().t0_ns, b.at(50));
  EXPECT_EQ(function_spans(flame->canvas()->data(), "train_step"), 1);
  EXPECT_EQ(function_spans(flame->canvas()->data(), "forward"), 1);
}

TEST(FlameView, AClickOnABoxZoomsToItAndBackReturns) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_flame(trace_recording(dir, &b));
  ASSERT_TRUE(w.window);
  gui::FlameView* flame = w.window->flame();
  gui::FlameCanvas* canvas = flame->canvas();
  const int64_t t0 = w.window->state()->t0(), t1 = w.window->state()->t1();
  canvas->grab();
  size_t step = 0;
  while (canvas->data().functions[canvas->data().spans[step].function].function != "train_step" ||
         canvas->data().spans[step].start_ns != b.at(60)) {
    ++step;
  }
  const QPoint centre = canvas->centreOf(step);
  ASSERT_GE(centre.x(), 0);
  QTest::mouseClick(canvas, Qt::LeftButton, {}, centre);
  EXPECT_EQ(w.window->state()->t0(), b.at(60));
  EXPECT_EQ(w.window->state()->t1(), b.at(90));
  test::settle(*w.window);
  EXPECT_EQ(canvas->data().t0_ns, b.at(60));
  ASSERT_TRUE(flame->backButton()->isEnabled());
  QTest::mouseClick(flame->backButton(), Qt::LeftButton);
  EXPECT_EQ(w.window->state()->t0(), t0);
  EXPECT_EQ(w.window->state()->t1(), t1);
  EXPECT_FALSE(flame->backButton()->isEnabled());
}

TEST(FlameView, ItsTimeAxisLinesUpWithTheCurvesPlotArea) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_flame(trace_recording(dir, &b));
  ASSERT_TRUE(w.window);
  gui::ViewState* state = w.window->state();
  ASSERT_GT(state->timeAxisRight(), state->timeAxisLeft());
  gui::FlameCanvas* canvas = w.window->flame()->canvas();
  const gui::SharedTimeAxis axis = canvas->axis();
  const int left = axis.left, right = axis.right;
  EXPECT_EQ(canvas->mapTo(w.window.get(), QPoint(left, 0)).x(), state->timeAxisLeft());
  EXPECT_EQ(canvas->mapTo(w.window.get(), QPoint(right, 0)).x(), state->timeAxisRight());
  // The outermost box spans the range: from the axis' left edge.
  canvas->grab();
  size_t main = 0;
  while (canvas->data().spans[main].depth != 0) ++main;
  EXPECT_EQ(canvas->spanAt(QPoint(left + 1, canvas->centreOf(main).y())), int(main));
}

TEST(FlameView, WithoutTraceOrStacksItSaysWhy) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 10);
  b.malloc(2, 0x2000, 10);
  const std::string path = dir.file("plain.db");
  b.write(path);
  auto w = open_flame(path);
  ASSERT_TRUE(w.window);
  gui::FlameCanvas* canvas = w.window->flame()->canvas();
  EXPECT_EQ(canvas->data().source, viewdata::FlameSource::kNone);
  EXPECT_GT(w.window->flame()->reads(), 0);
  canvas->grab();
  EXPECT_EQ(canvas->boxesDrawn(), 0);
}

TEST(FlameView, AllocationStacksMakeTheChartWithoutATrace) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 10, "", "model.py(7): forward\nmain.py(3): <module>");
  b.malloc(2, 0x2000, 10, "", "optim.py(7): step\nmain.py(4): <module>");
  const std::string path = dir.file("stacks.db");
  b.write(path);
  auto w = open_flame(path);
  ASSERT_TRUE(w.window);
  gui::FlameView* flame = w.window->flame();
  EXPECT_EQ(flame->canvas()->data().source, viewdata::FlameSource::kAllocationStacks);
  EXPECT_TRUE(flame->sourceText().contains("2 allocations")) << flame->sourceText().toStdString();
  flame->canvas()->grab();
  EXPECT_EQ(flame->canvas()->boxesDrawn(), 3);

  // In the narrowest window the line has no room for all of it: it ends in "…" after a
  // whole word (it was cut at the Back button, mid-word: "one box while consecutive").
  w.window->resize(300, 600);
  test::settle(*w.window);
  const QString shown = flame->sourceShown();
  ASSERT_TRUE(shown.endsWith(QChar(0x2026))) << shown.toStdString();
  const QString kept = shown.chopped(1);
  EXPECT_TRUE(flame->sourceText().startsWith(kept)) << shown.toStdString();
  EXPECT_TRUE(flame->sourceText().at(kept.size()).isSpace() ||
              flame->sourceText().at(kept.size()).isPunct())
      << "cut mid-word: " << shown.toStdString();
  const gui::ElidedLabel* label = flame->findChild<gui::ElidedLabel*>();
  ASSERT_NE(label, nullptr);
  EXPECT_LE(label->fontMetrics().horizontalAdvance(shown), label->contentsRect().width());
  EXPECT_EQ(label->toolTip(), flame->sourceText());
}

// Pixels of text in the rectangle (x0, top) - (x1, bottom) of `image` inside a box filled
// with `fill`: the labels are near black, a box light, its edges a shade darker.
int text_pixels(const QImage& image, QRgb fill, int x0, int x1, int top, int bottom) {
  int n = 0;
  for (int y = top; y <= bottom; ++y)
    for (int x = x0; x <= x1; ++x) n += qGray(image.pixel(x, y)) < qGray(fill) - 60;
  return n;
}

// A box's label lies inside the box's edges, descenders included: a function named by
// underscores alone shows them, at a shallow stack's row height and at the smallest one (a
// deep stack). With the baseline on the box's bottom edge, "_find_and_load" read "find and
// load": its underscores fell on the edge and under the row below.
TEST(FlameView, ALabelsUnderscoresShowInsideItsBox) {
  for (const int height : {400, 150}) {
    gui::ViewState state;
    gui::FlameCanvas canvas(&state);
    canvas.resize(600, height);
    viewdata::FlameData d;
    d.pid = 1;
    d.t0_ns = 0;
    d.t1_ns = 1000;
    d.source = viewdata::FlameSource::kTrace;
    d.threads = {1};
    d.functions = {{"a.py", 1, "________"}, {"a.py", 2, "inner"}};
    for (int depth = 0; depth < 8; ++depth) {
      viewdata::FlameSpan span;
      span.end_ns = 1000;
      span.thread_id = 1;
      span.depth = depth;
      span.function = depth % 2;  // each underscored box has a box under it
      d.spans.push_back(span);
    }
    canvas.setData(d);
    const QImage image = canvas.grab().toImage();
    const QPoint centre = canvas.centreOf(0);
    ASSERT_GE(centre.y(), 0) << height;
    // The box's edges: up and down from its centre, right of its label, to the edge's colour.
    const int x = canvas.axis().right - 10;
    const QRgb fill = image.pixel(x, centre.y());
    int top = centre.y(), bottom = centre.y();
    while (top > 0 && image.pixel(x, top - 1) == fill) --top;
    while (bottom + 1 < image.height() && image.pixel(x, bottom + 1) == fill) ++bottom;
    ASSERT_GE(bottom - top, 8) << height << ": the inside of a box";
    const int left = canvas.axis().left;
    EXPECT_GT(text_pixels(image, fill, left + 3, left + 120, top, bottom), 8)
        << height << ": no underscore inside the box's edges, rows " << top << " to " << bottom;
  }
}

TEST(FlameView, AStackDeeperThanTheChartScrollsToItsDeepestFrame) {
  test::TempDir dir;
  test::RecordingBuilder b;
  // 120 nested calls: at the smallest row height, far more than the chart's height.
  constexpr int kDepth = 120;
  for (int i = 0; i < kDepth; ++i) {
    b.slice(i * 0.1, 100 - i * 0.1,
            "deep.py(" + std::to_string(i + 1) + "): f" + std::to_string(i));
  }
  b.malloc(101, 0x1000, 1000);
  const std::string path = dir.file("deep.db");
  b.write(path);
  auto w = open_flame(path);
  ASSERT_TRUE(w.window);
  gui::FlameCanvas* canvas = w.window->flame()->canvas();
  ASSERT_EQ(canvas->data().source, viewdata::FlameSource::kTrace);
  size_t deepest = 0, outermost = 0;
  for (size_t i = 0; i < canvas->data().spans.size(); ++i) {
    if (canvas->data().spans[i].depth == kDepth - 1) deepest = i;
    if (canvas->data().spans[i].depth == 0) outermost = i;
  }
  ASSERT_EQ(canvas->data().spans[deepest].depth, kDepth - 1);
  const QRect shown = canvas->rect();

  // At first the outermost frames show; the deepest is below the chart's bottom.
  canvas->grab();
  EXPECT_TRUE(shown.contains(canvas->centreOf(outermost)));
  EXPECT_EQ(canvas->centreOf(deepest), QPoint(-1, -1));
  QScrollBar* bar = canvas->depthBar();
  ASSERT_TRUE(bar->isVisible());
  ASSERT_GT(bar->maximum(), 0);
  EXPECT_EQ(bar->value(), 0);

  // The wheel over the chart scrolls down.
  QWheelEvent down(QPointF(shown.center()), QPointF(canvas->mapToGlobal(shown.center())), QPoint(),
                   QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(canvas, &down);
  const int by_wheel = bar->value();
  EXPECT_GT(by_wheel, 0);
  // With Shift, a page at a time.
  QWheelEvent page(QPointF(shown.center()), QPointF(canvas->mapToGlobal(shown.center())), QPoint(),
                   QPoint(0, -120), Qt::NoButton, Qt::ShiftModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(canvas, &page);
  EXPECT_EQ(bar->value(), std::min(by_wheel + bar->pageStep(), bar->maximum()));

  // Scrolled to the end: the deepest frame is drawn whole inside the chart, and hit there.
  bar->setValue(bar->maximum());
  canvas->grab();
  const QPoint centre = canvas->centreOf(deepest);
  ASSERT_TRUE(shown.contains(centre)) << centre.x() << "," << centre.y();
  EXPECT_LT(centre.y() + 7, shown.bottom());
  EXPECT_EQ(canvas->spanAt(centre), int(deepest));
  EXPECT_EQ(canvas->centreOf(outermost), QPoint(-1, -1));  // scrolled off, under the ticks
}

}  // namespace
}  // namespace memtap
