// What a replayed recording's status says about the file itself.
#include <gtest/gtest.h>

#include "common/clock.h"
#include "monitor/report/units.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

// A recording whose monitor was killed has no memtap_meta complete=1: the window says it
// was cut: the status says so (the top bar shows it in red), with what to do in its warning.
TEST(ReplayStatus, ARecordingItsMonitorNeverFinishedIsSaidToBeCut) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  const std::string finished = dir.file("finished.db");
  const std::string cut = dir.file("cut.db");
  b.write(finished);
  b.write_cut(cut);

  auto source = test::open_loaded(finished);
  ASSERT_TRUE(source);
  EXPECT_FALSE(source->status().unfinished);
  source = test::open_loaded(cut);
  ASSERT_TRUE(source);
  const viewdata::SourceStatus status = source->status();
  EXPECT_TRUE(status.unfinished);
  EXPECT_NE(status.warning.find("memtap recover"), std::string::npos) << status.warning;
}

// A recording whose writer stopped on a full disk is unfinished too, but not cut: the status
// carries why and where it stopped, so the top bar can say it in place of "cut".
TEST(ReplayStatus, ARecordingStoppedByAFullDiskSaysWhereItStopped) {
  test::TempDir dir;
  // Rows from 12 s before now: the writer stops now (realtime), 12 s into the session.
  const int64_t start_ns = int64_t(realtime_ns()) - 12'000'000'000;
  test::RecordingBuilder b(100, start_ns);
  b.malloc(1, 0x1000, 4096);
  const std::string partial = b.write_stopped_by_full_disk(dir.file("full.db"));
  ASSERT_FALSE(partial.empty());

  auto source = test::open_loaded(partial);
  ASSERT_TRUE(source);
  const viewdata::SourceStatus status = source->status();
  EXPECT_TRUE(status.unfinished);
  const RecordingStop& stop = status.stopped;
  EXPECT_NE(stop.reason.find("database or disk is full"), std::string::npos) << stop.reason;
  EXPECT_TRUE(stop.disk_full);
  EXPECT_EQ(stop.first_ns, start_ns);
  EXPECT_GE(stop.stopped_ns, start_ns + 12'000'000'000);
  EXPECT_GT(stop.recorded_until_ns, start_ns);
  EXPECT_GT(stop.rows_recorded, 0u);
  EXPECT_GT(stop.rows_not_recorded, 0u);
  // The tooltip: where the file's events end (the writer stops behind them).
  EXPECT_NE(
      status.warning.find("; it holds the events up to " +
                          duration_text(stop.recorded_until_ns - start_ns) + " into the session"),
      std::string::npos)
      << status.warning;
}

}  // namespace
}  // namespace memtap
