// What a replayed recording's status says about the file itself.
#include <gtest/gtest.h>
#include <sqlite3.h>

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
  b.write(cut);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(cut.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "DELETE FROM memtap_meta WHERE key = 'complete'", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);

  auto source = test::open_loaded(finished);
  ASSERT_TRUE(source);
  EXPECT_FALSE(source->status().unfinished);
  source = test::open_loaded(cut);
  ASSERT_TRUE(source);
  const viewdata::SourceStatus status = source->status();
  EXPECT_TRUE(status.unfinished);
  EXPECT_NE(status.warning.find("memtap recover"), std::string::npos) << status.warning;
}

}  // namespace
}  // namespace memtap
