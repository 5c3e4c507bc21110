// A PyTorch snapshot opened in the window (memtap monitor snap.pickle): loaded like a CSV,
// its event table made into a database, its status saying the times are made up where the
// file has none, and the pool view at the dump showing the snapshot's own segments and
// blocks (held to Python's reading of the file, as the reader's tests are).
#include <gtest/gtest.h>

#include <filesystem>

#include "monitor/viewdata/pool_data.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

const std::string kSnapshots = std::string(MEMTAP_SHARED_DATA_DIR) + "/torch_snapshots/";

viewdata::PoolData pool_at_end(viewdata::DataSource& source, int32_t device) {
  viewdata::PoolRequest r;
  r.pid = 0;
  r.device = device;
  r.at_ns = source.status().last_ns;
  return test::block_query(source, [&](viewdata::BlockQueries& q) { return compute_pool(q, r); });
}

class TorchSnapshotWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(kSnapshots)) GTEST_SKIP() << kSnapshots << " is absent";
  }
};

// torch 2.0: no time_us, one trace entry. Its made-up times start after 0 (0 is "no events
// yet" to the status) and span a time the curves can be drawn over.
TEST_F(TorchSnapshotWindow, Torch20SnapshotLoadsWithMadeUpTimes) {
  auto source = test::open_loaded(kSnapshots + "LLM-inference__oom_snapshot.pickle");
  ASSERT_TRUE(source);
  const viewdata::SourceStatus s = source->status();
  EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(s.events, 639u);
  EXPECT_TRUE(s.synthetic_time);
  EXPECT_NE(s.first_ns, 0);
  EXPECT_GE(s.last_ns - s.first_ns, 1000000);  // at least a millisecond
  EXPECT_NE(s.warning.find("without time_us"), std::string::npos) << s.warning;
  EXPECT_NE(s.warning.find("460 blocks were there before its trace began"), std::string::npos)
      << s.warning;
  EXPECT_EQ(source->event_table(), "memscope_dump");
  EXPECT_FALSE(source->database_path().empty());
  // What the user opened, not the database made of it (the window's dialogs start there).
  EXPECT_EQ(source->recording_path(), kSnapshots + "LLM-inference__oom_snapshot.pickle");
  EXPECT_NE(source->database_path(), source->recording_path());

  // Python's reading: 176 segments of 11844714496 bytes, 460 blocks active_allocated.
  const viewdata::PoolData pool = pool_at_end(*source, 0);
  EXPECT_EQ(pool.segments_live, 176u);
  EXPECT_EQ(pool.reserved_bytes, 11844714496u);
  size_t blocks = 0;
  for (const viewdata::PoolSegmentData& segment : pool.segments) blocks += segment.blocks.size();
  EXPECT_EQ(blocks, 460u);
  EXPECT_EQ(pool.unsegmented_blocks, 0u);
}

// With time_us: the file's own times, and nothing said about them.
TEST_F(TorchSnapshotWindow, SnapshotWithTimesKeepsThem) {
  auto source = test::open_loaded(kSnapshots + "MAGMA27-a2__memory_snapshot.pickle");
  ASSERT_TRUE(source);
  const viewdata::SourceStatus s = source->status();
  EXPECT_FALSE(s.synthetic_time);
  EXPECT_EQ(s.first_ns, 1776479641085368000);
  EXPECT_EQ(s.last_ns, 1776479641333549000);
  const viewdata::PoolData pool = pool_at_end(*source, 0);
  EXPECT_EQ(pool.segments_live, 216u);
  EXPECT_EQ(pool.reserved_bytes, 14180941824u);
}

}  // namespace
}  // namespace memtap
