// What the top bar's status line says about a replayed recording that ends early: cut (its
// monitor killed) or stopped by a full disk (and where), in red, and what to do about it.
#include "monitor/gui/top_bar.h"

#include <gtest/gtest.h>

#include <QLabel>

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

}  // namespace
}  // namespace memtap
