// The breakdown at an instant driven as a user drives it: the header tells what is live at
// the cursor, the boxes carry their names, bytes and shares, a click on one filters the
// block table, "At peak" (and --at peak, even before the process is chosen) moves the
// cursor to the Allocated peak, and an instant with nothing live says so.
#include "monitor/gui/breakdown_view.h"

#include <gtest/gtest.h>

#include "monitor/gui/block_table_view.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/leak_recording.h"

namespace memtap {
namespace {

const gui::BreakdownMap::Box* box_labelled(const gui::BreakdownMap& map, const QString& label) {
  for (const auto& b : map.boxes()) {
    if (b.label == label) return &b;
  }
  return nullptr;
}

std::string leak_path(const test::TempDir& dir, test::RecordingBuilder* b) {
  test::build_leak_recording(*b);
  const std::string path = dir.file("leak.db");
  b->write(path);
  return path;
}

TEST(BreakdownView, ShowsWhatIsLiveAtTheCursorInLabelledBoxes) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(leak_path(dir, &b));
  ASSERT_TRUE(w.window);
  w.window->showView("breakdown");
  w.window->state()->setCursor(b.at(53));
  test::settle(*w.window);
  gui::BreakdownView* view = w.window->breakdown();
  ASSERT_TRUE(test::wait_for([&] { return view->map()->data().t_ns == b.at(53); }, "the tree"));
  EXPECT_EQ(view->header()->text().toStdString(), "Allocated at +0.053 s: 1.1 MiB in 7 blocks");
  const auto* host = box_labelled(*view->map(), "HOST");
  ASSERT_NE(host, nullptr);
  EXPECT_TRUE(host->labelled);
  EXPECT_EQ(host->numbers, QStringLiteral("1.1 MiB · 100.0%"));
  const auto* activations = box_labelled(*view->map(), "activations");
  ASSERT_NE(activations, nullptr);
  EXPECT_TRUE(activations->labelled);
  EXPECT_TRUE(activations->numbers.endsWith("%")) << activations->numbers.toStdString();
  const auto* stack = box_labelled(*view->map(), "backward (model.py:9)");
  ASSERT_NE(stack, nullptr);
  EXPECT_TRUE(stack->tip.contains("HOST › activations › backward (model.py:9)"))
      << stack->tip.toStdString();
}

TEST(BreakdownView, ClickingABoxFiltersTheBlockTable) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(leak_path(dir, &b));
  ASSERT_TRUE(w.window);
  w.window->showView("breakdown");
  w.window->state()->setCursor(b.at(53));
  test::settle(*w.window);
  gui::BreakdownMap* map = w.window->breakdown()->map();
  ASSERT_TRUE(test::wait_for([&] { return !map->boxes().empty(); }, "the boxes"));
  const auto* stack = box_labelled(*map, "forward (model.py:7)");
  ASSERT_NE(stack, nullptr);
  QTest::mouseClick(map, Qt::LeftButton, {}, stack->rect.center().toPoint());
  EXPECT_EQ(w.window->state()->blockFilter(), QStringLiteral("forward (model.py:7)"));
  EXPECT_EQ(w.window->tabs()->currentWidget(), w.window->blockTable());
}

TEST(BreakdownView, AtPeakMovesTheCursorToTheAllocatedPeak) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(leak_path(dir, &b));
  ASSERT_TRUE(w.window);
  w.window->showView("breakdown");
  gui::BreakdownView* view = w.window->breakdown();
  QTest::mouseClick(view->atPeakButton(), Qt::LeftButton);
  ASSERT_TRUE(test::wait_for([&] { return w.window->state()->cursor() == b.at(test::kPeakMs); },
                             "the cursor at the peak"));
  test::settle(*w.window);
  ASSERT_TRUE(test::wait_for([&] { return view->map()->data().t_ns == b.at(test::kPeakMs); },
                             "the tree at the peak"));
  EXPECT_EQ(view->map()->data().bytes, (1u << 20) + 50000u + 5000u);
}

TEST(BreakdownView, AtPeakAskedBeforeTheProcessIsChosenWaitsForIt) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::string path = leak_path(dir, &b);
  std::string error;
  auto source = viewdata::open_recording(path, &error);
  ASSERT_NE(source, nullptr) << error;
  gui::MainWindow window(source.get());
  ASSERT_EQ(window.state()->pid(), 0u);  // the top bar has not chosen yet
  window.setCursorAtPeak();
  ASSERT_TRUE(test::wait_for([&] { return window.state()->cursor() == b.at(test::kPeakMs); },
                             "the cursor at the peak"));
}

TEST(BreakdownView, AnInstantWithNothingAllocatedSaysSo) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(leak_path(dir, &b));
  ASSERT_TRUE(w.window);
  w.window->showView("breakdown");
  w.window->state()->setCursor(b.at(5));
  test::settle(*w.window);
  gui::BreakdownMap* map = w.window->breakdown()->map();
  ASSERT_TRUE(test::wait_for([&] { return map->data().t_ns == b.at(5); }, "the tree"));
  EXPECT_TRUE(map->boxes().empty());
  EXPECT_EQ(map->emptyText(), QStringLiteral("Nothing allocated at +0.005 s"));
  EXPECT_EQ(w.window->breakdown()->header()->text().toStdString(),
            "Allocated at +0.005 s: nothing");
}

}  // namespace
}  // namespace memtap
