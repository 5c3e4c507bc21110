// DumpInserter's batches (dump_inserter.h): rows wait until 32 of them go in through one
// INSERT or flush() writes the rest, one by one; every row keeps its own text (a Name,
// stacks and Attr bound per row of the statement, a step's number in its own buffer), and
// the IDs SQLite assigns are the ones given.
#include "monitor/store/dump_inserter.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/store/memscope_schema.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

using test::Db;
using test::Rows;
using test::ScratchDb;
using test::TempDir;

// Session strings 1-3 are names, 4-5 Python stacks; most rows repeat the previous row's,
// so the bindings kept from one statement to the next are tested too.
DumpRow text_row(int64_t id) {
  DumpRow row;
  if (id % 7 == 3) {
    row.event = DumpEvent::kSystem;
    row.event_type = DumpEventType::kStep;
    row.step = uint64_t(id) * 10;
  } else {
    row.event = id % 2 == 0 ? DumpEvent::kMalloc : DumpEvent::kFree;
    row.event_type = DumpEventType::kHost;
    if (id % 17 == 5 || id % 17 == 6) {  // device blocks, on devices whose ids change
      row.event_type = DumpEventType::kHal;
      row.device = 1 + int32_t(id % 3);
    }
    row.ptr = 0x7f0000000000 + uint64_t(id) * 64;
    row.size_bytes = 16 + uint64_t(id);
    row.allocation_id = uint64_t(id) / 2 + 1;
    row.name = 1 + uint32_t(id / 5) % 3;
    row.stack_python = id % 11 < 6 ? 4 : 5;
  }
  row.timestamp_ns = 1795000000000000000 + id * 100;
  row.process_id = id % 40 < 30 ? 7 : 8;
  row.thread_id = 7 + uint32_t(id % 3);
  return row;
}

// What the table should hold for text_row(id), in the columns the test reads.
std::vector<std::string> expected_columns(int64_t id, const std::vector<std::string>& names) {
  const DumpRow row = text_row(id);
  PtrText ptr{};
  const std::string pid = std::to_string(row.process_id);
  const std::string tid = std::to_string(row.thread_id);
  if (row.event == DumpEvent::kSystem) {
    return {
        std::to_string(id), "SYSTEM", "STEP", std::to_string(row.step), pid, tid, "N/A", "N/A", ""};
  }
  const bool device = row.event_type == DumpEventType::kHal;
  return {std::to_string(id),
          row.event == DumpEvent::kMalloc ? "MALLOC" : "FREE",
          device ? "HAL" : "HOST",
          names[row.name],
          pid,
          tid,
          device ? std::to_string(row.device) : "cpu",
          std::string(format_ptr_hex(row.ptr, ptr)),
          row.stack_python == 4 ? "a.py(1): f" : "b.py(2): g"};
}

constexpr const char* kColumnsRead =
    "SELECT ID, Event, \"Event Type\", Name, \"Process Id\", \"Thread Id\", \"Device Id\", Ptr, "
    "\"Call Stack(Python)\" FROM memscope_dump ORDER BY ID";

class DumpInserterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    path_ = dir_.file("text.db");
    db_ = std::make_unique<ScratchDb>(path_, kCreateMemscopeDumpSql);
    std::string error;
    inserter_ = DumpInserter::prepare(db_->db(), &error);
    ASSERT_NE(inserter_, nullptr) << error;
    for (uint32_t id = 1; id < names_.size(); ++id) inserter_->define_string(id, names_[id]);
    inserter_->define_string(4, "a.py(1): f");
    inserter_->define_string(5, "b.py(2): g");
  }
  void TearDown() override { inserter_.reset(); }
  int64_t stored_rows() const { return db_->count("memscope_dump"); }
  void commit() { db_->commit(); }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<ScratchDb> db_;
  std::unique_ptr<DumpInserter> inserter_;
  std::vector<std::string> names_ = {"", "weights", "activations", "grad"};
};

TEST_F(DumpInserterTest, RowsGoInByTheBatchAndFlushWritesTheRest) {
  constexpr int kBatch = DumpInserter::kBatchRows;
  for (int64_t id = 1; id < kBatch; ++id) {
    ASSERT_EQ(inserter_->insert(id, text_row(id)), SQLITE_DONE);
  }
  EXPECT_EQ(inserter_->pending_rows(), kBatch - 1);
  EXPECT_EQ(stored_rows(), 0);
  ASSERT_EQ(inserter_->insert(kBatch, text_row(kBatch)), SQLITE_DONE);
  EXPECT_EQ(inserter_->pending_rows(), 0);
  EXPECT_EQ(stored_rows(), kBatch);
  // Three more batches and 5 rows alone, with the same bindings kept between statements.
  const int64_t last = 4 * kBatch + 5;
  for (int64_t id = kBatch + 1; id <= last; ++id) {
    ASSERT_EQ(inserter_->insert(id, text_row(id)), SQLITE_DONE);
  }
  EXPECT_EQ(inserter_->pending_rows(), 5);
  ASSERT_EQ(inserter_->flush(), SQLITE_DONE);
  EXPECT_EQ(inserter_->pending_rows(), 0);
  commit();

  Db db(path_);
  Rows expected;
  for (int64_t id = 1; id <= last; ++id) expected.push_back(expected_columns(id, names_));
  EXPECT_EQ(db.query(kColumnsRead), expected);
  // Each row's Attr is its own, though every row of a batch is formatted before the
  // statement runs.
  EXPECT_EQ(db.value("SELECT count(DISTINCT Attr) FROM memscope_dump WHERE Event = 'MALLOC'"),
            db.value("SELECT count(*) FROM memscope_dump WHERE Event = 'MALLOC'"));
}

// The writer's IDs are dense, and SQLite assigns them; any other ID is written as given, in
// a batch and alone.
TEST_F(DumpInserterTest, IdsThatSkipAreKeptAsGiven) {
  const std::vector<int64_t> ids = {5, 6, 7, 40, 41, 1000, 1002};
  std::vector<int64_t> all;
  for (int round = 0; round < 5; ++round) {  // 35 rows: one batch and three left
    for (const int64_t id : ids) all.push_back(id + round * 2000);
  }
  for (const int64_t id : all) ASSERT_EQ(inserter_->insert(id, text_row(id)), SQLITE_DONE);
  EXPECT_EQ(inserter_->pending_rows(), int(all.size()) - DumpInserter::kBatchRows);
  ASSERT_EQ(inserter_->flush(), SQLITE_DONE);
  commit();

  Db db(path_);
  Rows expected;
  for (const int64_t id : all) expected.push_back(expected_columns(id, names_));
  EXPECT_EQ(db.query(kColumnsRead), expected);
}

// A string defined again is bound anew wherever a statement still pointed at its old text.
TEST_F(DumpInserterTest, AStringDefinedAgainIsWrittenWithItsNewText) {
  constexpr int kBatch = DumpInserter::kBatchRows;
  DumpRow row = text_row(0);  // a MALLOC named "weights"
  ASSERT_EQ(row.name, 1u);
  int64_t id = 1;
  for (; id <= kBatch + 1; ++id) ASSERT_EQ(inserter_->insert(id, row), SQLITE_DONE);
  ASSERT_EQ(inserter_->flush(), SQLITE_DONE);
  inserter_->define_string(1, "renamed");
  for (; id <= 2 * kBatch + 2; ++id) ASSERT_EQ(inserter_->insert(id, row), SQLITE_DONE);
  ASSERT_EQ(inserter_->flush(), SQLITE_DONE);
  commit();

  Db db(path_);
  EXPECT_EQ(
      db.query("SELECT Name, count(*) FROM memscope_dump GROUP BY Name ORDER BY Name"),
      (Rows{{"renamed", std::to_string(kBatch + 1)}, {"weights", std::to_string(kBatch + 1)}}));
}

// A batch that SQLite refuses is an error of every row in it: none of them is stored.
TEST_F(DumpInserterTest, ABatchThatFailsReportsItsError) {
  ASSERT_EQ(sqlite3_exec(db_->db(),
                         "CREATE TRIGGER refuse BEFORE INSERT ON memscope_dump WHEN "
                         "NEW.\"Timestamp(ns)\" = 1795000000000008300 BEGIN SELECT "
                         "RAISE(ABORT, 'refused'); END",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  int rc = SQLITE_DONE;
  int64_t id = 0;
  for (; id < 4 * DumpInserter::kBatchRows && rc == SQLITE_DONE; ++id) {
    rc = inserter_->insert(id, text_row(id));  // row 83: in the third batch
  }
  EXPECT_EQ(rc, SQLITE_CONSTRAINT);
  EXPECT_EQ(id, 3 * DumpInserter::kBatchRows);  // found when its batch went in
  EXPECT_EQ(stored_rows(), 2 * DumpInserter::kBatchRows);
}

}  // namespace
}  // namespace memtap
