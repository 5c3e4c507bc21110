// What the top bar's status line says about a replayed recording that ends early: cut (its
// monitor killed) or stopped by a full disk (and where), in red, and what to do about it;
// and where the line goes in a narrow window.
#include "monitor/gui/top_bar.h"

#include <gtest/gtest.h>

#include <QLabel>
#include <QPushButton>

#include "monitor/report/units.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

// The status line once the window has shown the loaded recording.
QString status_line(test::OpenWindow& w) {
  QLabel* label = w.window->topBar()->statusLabel();
  test::wait_for([&] { return w.source->status().loaded && label->text().contains("events"); },
                 "the status line");
  return label->text();
}

// A full disk is not a killed monitor: the bar says that the recording stopped, why, and how
// far into the session its events go (where the curves end), not that it was cut.
TEST(TopBar, ARecordingStoppedByAFullDiskSaysSoAndWhereItsEventsEnd) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  const std::string partial = b.write_stopped_by_full_disk(dir.file("full.db"));
  ASSERT_FALSE(partial.empty());
  auto w = test::open_window(partial);
  ASSERT_TRUE(w.window);
  const QString text = status_line(w);
  const RecordingStop stop = w.source->status().stopped;
  ASSERT_GT(stop.recorded_until_ns, b.start_ns());
  const std::string until = duration_text(stop.recorded_until_ns - b.start_ns());
  EXPECT_TRUE(text.contains(QString::fromStdString("recording stopped (disk full): events up to +" +
                                                   until + " only, see memtap recover")))
      << text.toStdString();
  EXPECT_FALSE(text.contains("cut")) << text.toStdString();
  EXPECT_EQ(w.window->topBar()->statusLabel()->styleSheet(), "color: #b00020");
}

// A recording whose monitor was killed (no `complete`, no stop) is said to be cut.
TEST(TopBar, ARecordingItsMonitorNeverFinishedIsSaidToBeCut) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  const std::string cut = dir.file("cut.db");
  b.write_cut(cut);
  auto w = test::open_window(cut);
  ASSERT_TRUE(w.window);
  const QString text = status_line(w);
  EXPECT_TRUE(text.contains("not finished: cut, see memtap recover")) << text.toStdString();
  EXPECT_FALSE(text.contains("stopped")) << text.toStdString();
}

// However narrow the window, the state, the events and the drops show whole: beside the
// selectors while they fit there, on a row of their own below them when not, and back beside
// them when the window widens.
TEST(TopBar, TheCountsAndDropsShowWholeInANarrowWindowAndBesideTheSelectorsInAWideOne) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  b.write(dir.file("r.db"));
  auto w = test::open_window(dir.file("r.db"), 800, 600);
  ASSERT_TRUE(w.window);
  const QString text = status_line(w);
  QLabel* label = w.window->topBar()->statusLabel();
  QPushButton* live_button = w.window->topBar()->liveButton();
  const QRect live = live_button->geometry();
  auto counts_whole = [&] {
    const QString counts = label->text().left(label->text().indexOf("dropped") + 7);
    return label->text().contains("0 dropped") && label->isVisible() &&
           label->fontMetrics().horizontalAdvance(counts) <= label->contentsRect().width();
  };
  EXPECT_TRUE(counts_whole()) << text.toStdString() << " in " << label->width() << " px";
  EXPECT_GE(label->geometry().top(), live.bottom()) << "below the selectors";
  EXPECT_EQ(label->alignment() & Qt::AlignHorizontal_Mask, Qt::AlignLeft);

  w.window->resize(1400, 600);
  // One row again: the bar no taller than its selectors.
  ASSERT_TRUE(test::wait_for(
      [&] {
        return label->geometry().center().y() == live_button->geometry().center().y() &&
               w.window->topBar()->height() <= live.height() + 16;
      },
      "the status line beside the Live button, on one row"))
      << "bar " << w.window->topBar()->height() << " px high";
  EXPECT_GT(label->geometry().left(), live_button->geometry().right());
  EXPECT_TRUE(counts_whole()) << label->text().toStdString();
  EXPECT_EQ(label->alignment() & Qt::AlignHorizontal_Mask, Qt::AlignRight);
}

}  // namespace
}  // namespace memtap
