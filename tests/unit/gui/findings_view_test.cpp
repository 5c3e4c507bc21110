// The findings panel driven as a user drives it: the report's findings are listed, a click
// on one moves the cursor (and the range, when the moment is outside it), filters the block
// table and brings it up; a clean run and a scope without events say so.
#include "monitor/gui/findings_view.h"

#include <gtest/gtest.h>

#include <QLabel>

#include "monitor/gui/block_table_view.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/leak_recording.h"

namespace memtap {
namespace {

size_t index_of(const gui::FindingsView& v, const std::string& title_part) {
  for (size_t i = 0; i < v.findings().size(); ++i) {
    if (v.findings()[i].title.find(title_part) != std::string::npos) return i;
  }
  return size_t(-1);
}

TEST(FindingsView, ClickingALeakMovesTheCursorAndFiltersTheBlocks) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::build_leak_recording(b);
  const std::string path = dir.file("leak.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::FindingsView* view = w.window->findings();
  ASSERT_TRUE(test::wait_for([&] { return !view->findings().empty(); }, "the findings"));
  EXPECT_TRUE(view->emptyText().isEmpty());
  const size_t leak = index_of(*view, "Leak suspect: owner cache");
  ASSERT_NE(leak, size_t(-1));
  // The user looks at the start only: the leak's steps are outside the range.
  w.window->state()->setRange(b.at(0), b.at(5));
  test::settle(*w.window);

  QTest::mouseClick(view->card(leak), Qt::LeftButton);
  gui::ViewState* s = w.window->state();
  EXPECT_EQ(s->cursor(), b.at(80));
  EXPECT_TRUE(s->cursorSet());
  EXPECT_LE(s->t0(), b.at(10));  // the range shows the growth, from its first step
  EXPECT_GE(s->t1(), b.at(80));
  EXPECT_EQ(s->blockFilter(), QStringLiteral("cache"));
  EXPECT_EQ(w.window->tabs()->currentWidget(), w.window->blockTable());
}

TEST(FindingsView, ClickingThePeakOpensTheBreakdownThere) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::build_leak_recording(b);
  const std::string path = dir.file("leak.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::FindingsView* view = w.window->findings();
  ASSERT_TRUE(test::wait_for([&] { return !view->findings().empty(); }, "the findings"));
  ASSERT_EQ(view->findings().front().kind, viewdata::FindingKind::kPeak);
  QTest::mouseClick(view->card(0), Qt::LeftButton);
  EXPECT_EQ(w.window->state()->cursor(), b.at(test::kPeakMs));
  EXPECT_EQ(w.window->tabs()->currentWidget(), (QWidget*)w.window->breakdown());
}

TEST(FindingsView, ACleanRunSaysSo) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096, "weights");
  b.free(2, 0x1000);
  const std::string path = dir.file("clean.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::FindingsView* view = w.window->findings();
  ASSERT_TRUE(test::wait_for([&] { return view->findings().size() == 2; }, "the findings"));
  EXPECT_EQ(view->findings()[1].title, "Nothing wrong found");
}

// Process id 0 is a real process: CANN's operator_memory CSV has no process id, and its
// rows are process 0. Taken for "no process chosen yet", the findings and the breakdown
// never asked, and a host-only file never even told the views a scope was chosen.
TEST(FindingsView, ProcessZeroIsAProcessLikeAnyOther) {
  test::TempDir dir;
  test::RecordingBuilder b(0);
  b.malloc(1, 0x1000, 4096, "weights");
  b.free(2, 0x1000);
  const std::string path = dir.file("pid0.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  EXPECT_TRUE(w.window->state()->hasScope());
  gui::FindingsView* view = w.window->findings();
  ASSERT_TRUE(test::wait_for([&] { return view->findings().size() == 2; }, "the findings"));
  EXPECT_EQ(view->findings()[0].kind, viewdata::FindingKind::kPeak);
}

TEST(FindingsView, AScopeWithoutEventsSaysWhyThereIsNothing) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096, "weights");
  const std::string path = dir.file("one.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::FindingsView* view = w.window->findings();
  ASSERT_TRUE(test::wait_for([&] { return !view->findings().empty(); }, "the findings"));
  w.window->state()->setScope(b.pid(), 3);  // a device this process never used
  test::settle(*w.window);
  ASSERT_TRUE(test::wait_for([&] { return view->findings().empty(); }, "no findings"));
  EXPECT_EQ(view->emptyText(),
            QStringLiteral("No memory events for this process and device: nothing to find"));
}

TEST(FindingsView, BeforeAnyAnswerItSaysNoFindingsYet) {
  gui::ViewState state;
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  const std::string path = dir.file("one.db");
  b.write(path);
  std::string error;
  auto source = viewdata::open_recording(path, &error);
  ASSERT_NE(source, nullptr) << error;
  gui::EngineClient client(source.get());
  gui::FindingsView view(&state, &client);
  EXPECT_EQ(view.emptyText(), QStringLiteral("No findings yet"));
}

// In the narrowest window every card's words show whole: the panel keeps room for about 26
// characters a line, and a long owner name breaks at its dots instead of being cut. (At the
// window's narrowest the dock was 70 px wide: "Peak: 5.2 allocated", "Leak sus owner (n".)
TEST(FindingsView, TheCardsWordsShowWholeInTheNarrowestWindow) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::string owner = "model.encoder.layer0.self_attention.kv_cache";
  for (int k = 1; k <= 8; ++k) {
    b.step(10.0 * k, uint64_t(k));
    if (k < 8) b.malloc(10.0 * k + 1, 0x100000 + uint64_t(k) * 0x1000, 100000, owner);
  }
  const std::string path = dir.file("long_owner.db");
  b.write(path);
  auto w = test::open_window(path, 300, 300);  // below the minimum: the minimum
  ASSERT_TRUE(w.window);
  gui::FindingsView* view = w.window->findings();
  ASSERT_TRUE(test::wait_for([&] { return !view->findings().empty(); }, "the findings"));
  test::settle(*w.window);
  ASSERT_NE(index_of(*view, "Leak suspect: owner"), size_t(-1));
  bool owner_shown = false;
  for (size_t i = 0; i < view->findings().size(); ++i) {
    for (const QLabel* label : view->card(i)->findChildren<QLabel*>()) {
      QString text = label->text();
      // Laid out as wide as its longest word, and that width in view (the list scrolls
      // only up and down: what lies past the panel's edge is cut).
      EXPECT_LE(label->minimumSizeHint().width(), label->contentsRect().width())
          << text.toStdString() << " in " << label->contentsRect().width() << " px";
      const int right = label->mapTo(view, QPoint(label->width(), 0)).x();
      EXPECT_LE(right, view->width())
          << text.toStdString() << ": ends at " << right << " px of " << view->width();
      if (text.remove(QChar(0x200B)).contains(QString::fromStdString(owner))) owner_shown = true;
    }
  }
  EXPECT_TRUE(owner_shown) << "the owner's name, whole once its break marks are left out";
}

}  // namespace
}  // namespace memtap
