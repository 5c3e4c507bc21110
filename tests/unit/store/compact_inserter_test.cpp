// CompactInserter's batches (compact_inserter.h): rows wait until 32 of them go in through
// one INSERT or flush() writes the rest, and the IDs SQLite assigns are the ones given.
#include "monitor/store/compact_inserter.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/store/compact_schema.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

using test::Db;
using test::Rows;
using test::ScratchDb;
using test::TempDir;

DumpRow block_row(int64_t id) {
  DumpRow row;
  row.event = id % 2 == 0 ? DumpEvent::kMalloc : DumpEvent::kFree;
  row.timestamp_ns = 1795000000000000000 + id * 100;
  row.process_id = 7;
  row.thread_id = 7 + uint32_t(id % 3);
  row.ptr = 0x7f0000000000 + uint64_t(id) * 64;
  row.size_bytes = 16 + uint64_t(id);
  row.allocation_id = uint64_t(id) / 2 + 1;
  return row;
}

class CompactInserterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    path_ = dir_.file("compact.db");
    db_ = std::make_unique<ScratchDb>(path_, compact_schema_sql());
    std::string error;
    inserter_ = CompactInserter::prepare(db_->db(), &error);
    ASSERT_NE(inserter_, nullptr) << error;
  }
  void TearDown() override { inserter_.reset(); }
  int64_t stored_rows() const { return db_->count("memtap_event"); }
  void commit() { db_->commit(); }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<ScratchDb> db_;
  std::unique_ptr<CompactInserter> inserter_;
};

TEST_F(CompactInserterTest, RowsGoInByTheBatchAndFlushWritesTheRest) {
  constexpr int kBatch = CompactInserter::kBatchRows;
  for (int64_t id = 0; id < kBatch - 1; ++id) {
    ASSERT_EQ(inserter_->insert(id, block_row(id)), SQLITE_DONE);
  }
  EXPECT_EQ(inserter_->pending_rows(), kBatch - 1);
  EXPECT_EQ(stored_rows(), 0);
  ASSERT_EQ(inserter_->insert(kBatch - 1, block_row(kBatch - 1)), SQLITE_DONE);
  EXPECT_EQ(inserter_->pending_rows(), 0);
  EXPECT_EQ(stored_rows(), kBatch);
  for (int64_t id = kBatch; id < 2 * kBatch + 5; ++id) {
    ASSERT_EQ(inserter_->insert(id, block_row(id)), SQLITE_DONE);
  }
  EXPECT_EQ(inserter_->pending_rows(), 5);
  ASSERT_EQ(inserter_->flush(), SQLITE_DONE);
  EXPECT_EQ(inserter_->pending_rows(), 0);
  commit();

  Db db(path_);
  Rows expected;
  for (int64_t id = 0; id < 2 * kBatch + 5; ++id) {
    const DumpRow row = block_row(id);
    expected.push_back({std::to_string(id), std::to_string(int(row.event)),
                        std::to_string(int64_t(row.ptr)), std::to_string(row.size_bytes),
                        std::to_string(row.allocation_id)});
  }
  EXPECT_EQ(db.query("SELECT ID, event, ptr, size_bytes, allocation_id FROM memtap_event "
                     "ORDER BY ID"),
            expected);
  EXPECT_EQ(db.value("SELECT count(*) FROM memtap_thread"), "3");
  EXPECT_EQ(db.query("SELECT first_id FROM memtap_event_chunk"), (Rows{{"0"}}));
}

// The writer's IDs are dense, and SQLite assigns them; any other ID is written as given,
// in a batch and alone.
TEST_F(CompactInserterTest, IdsThatSkipAreKeptAsGiven) {
  const std::vector<int64_t> ids = {5, 6, 7, 40, 41, 1000, 1002};
  std::vector<int64_t> all;
  for (int round = 0; round < 5; ++round) {  // 35 rows: one batch and three left
    for (const int64_t id : ids) all.push_back(id + round * 2000);
  }
  for (const int64_t id : all) ASSERT_EQ(inserter_->insert(id, block_row(id)), SQLITE_DONE);
  EXPECT_EQ(inserter_->pending_rows(), int(all.size()) - CompactInserter::kBatchRows);
  ASSERT_EQ(inserter_->flush(), SQLITE_DONE);
  commit();

  Db db(path_);
  Rows expected;
  for (const int64_t id : all) {
    expected.push_back({std::to_string(id), std::to_string(int64_t(block_row(id).ptr))});
  }
  EXPECT_EQ(db.query("SELECT ID, ptr FROM memtap_event ORDER BY ID"), expected);
}

// The largest pid and tid make the key that also marks "no thread numbered yet": their
// thread is numbered and stored like any other, not taken for the mark's -1.
TEST_F(CompactInserterTest, TheLargestPidAndTidAreAThreadLikeAnyOther) {
  DumpRow row = block_row(0);
  row.process_id = 4294967295u;
  row.thread_id = 4294967295u;
  ASSERT_EQ(inserter_->insert(0, row), SQLITE_DONE);
  ASSERT_EQ(inserter_->flush(), SQLITE_DONE);
  commit();
  Db db(path_);
  EXPECT_EQ(db.query("SELECT t.process_id, t.thread_id FROM memtap_event e JOIN memtap_thread t "
                     "ON t.thread = e.thread"),
            (Rows{{"4294967295", "4294967295"}}));
}

// A batch that SQLite refuses is an error of every row in it: none of them is stored.
TEST_F(CompactInserterTest, ABatchThatFailsReportsItsError) {
  ASSERT_EQ(sqlite3_exec(db_->db(),
                         "CREATE TRIGGER refuse BEFORE INSERT ON memtap_event WHEN NEW.size_bytes "
                         "= 99 BEGIN SELECT RAISE(ABORT, 'refused'); END",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  int rc = SQLITE_DONE;
  int64_t id = 0;
  for (; id < CompactInserter::kBatchRows && rc == SQLITE_DONE; ++id) {
    rc = inserter_->insert(id, block_row(id));  // row 83 has size 99: in the third batch
  }
  EXPECT_EQ(rc, SQLITE_DONE);
  for (; id < 4 * CompactInserter::kBatchRows && rc == SQLITE_DONE; ++id) {
    rc = inserter_->insert(id, block_row(id));
  }
  EXPECT_EQ(rc, SQLITE_CONSTRAINT);
  EXPECT_EQ(id, 3 * CompactInserter::kBatchRows);  // found when its batch went in
  EXPECT_EQ(stored_rows(), 2 * CompactInserter::kBatchRows);
}

}  // namespace
}  // namespace memtap
