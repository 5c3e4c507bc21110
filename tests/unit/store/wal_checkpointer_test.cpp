// WalCheckpointer: once attached, the writer's connection no longer checkpoints by itself
// (its log keeps every page a commit wrote), and the checkpoint thread copies the log into
// the file after commits, from its own connection.
#include "monitor/store/wal_checkpointer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "common/cpu_share.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

sqlite3* open_wal(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS t (x BLOB)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  return db;
}

// Commits `n` transactions of 100 rows of 1 KiB each.
void commit_rows(sqlite3* db, int n) {
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(sqlite3_exec(db,
                           "BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
                           "WHERE i < 100) INSERT INTO t SELECT randomblob(1024) FROM c; COMMIT",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
}

// The log's frames and how many of them are in the file.
std::pair<int, int> wal_state(sqlite3* db) {
  int log = -1, done = -1;
  sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
  return {log, done};
}

// Waits (bounded) until the thread has run a checkpoint.
bool wait_for_checkpoint(const WalCheckpointer& checkpointer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (checkpointer.checkpoints() == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// A WAL database in a temporary directory, its writer's connection, and a checkpointer
// attached to it (attach()).
class WalCheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    path_ = dir_.file("w.db");
    writer_ = open_wal(path_);
  }
  void TearDown() override {
    checkpointer_.reset();
    sqlite3_close(writer_);
  }
  void attach(std::shared_ptr<const CpuShare> share = nullptr,
              int deferred_wal_pages = WalCheckpointer::kDeferredWalPages) {
    std::string error;
    checkpointer_ = WalCheckpointer::start(path_, std::move(share), &error, deferred_wal_pages);
    ASSERT_NE(checkpointer_, nullptr) << error;
    checkpointer_->attach(writer_);
  }
  uintmax_t file_size() const { return std::filesystem::file_size(path_); }
  uintmax_t log_size() const { return std::filesystem::file_size(path_ + "-wal"); }

  test::TempDir dir_;
  std::string path_;
  sqlite3* writer_ = nullptr;
  std::unique_ptr<WalCheckpointer> checkpointer_;
};

TEST_F(WalCheckpointerTest, TheThreadCopiesTheLogAfterCommits) {
  ASSERT_NO_FATAL_FAILURE(attach());
  commit_rows(writer_, 20);  // ~2 MB: SQLite alone would have checkpointed at 1000 pages
  EXPECT_TRUE(wait_for_checkpoint(*checkpointer_));
  checkpointer_.reset();  // joins: every requested checkpoint has run
  // The thread's copies, not the writer's: the file holds the rows before the writer's own
  // connection checkpoints anything (its first checkpoint is wal_state's, below). A thread
  // whose checkpoints copy nothing leaves the file at its header page.
  EXPECT_GT(file_size(), 2'000'000u);
  const auto [log, done] = wal_state(writer_);
  EXPECT_GT(log, 0);
  EXPECT_EQ(done, log);
}

TEST_F(WalCheckpointerTest, AnAttachedWriterNoLongerCheckpointsByItself) {
  ASSERT_NO_FATAL_FAILURE(attach());
  checkpointer_.reset();     // gone before any commit: nobody copies the log
  commit_rows(writer_, 60);  // ~6 MB, 1,500 pages: SQLite alone checkpoints at 1,000
  // The log was never restarted: it holds every page written.
  EXPECT_GT(log_size(), 6'000'000u);
}

// While the program runs the log is left to grow, up to the deferred size: the commits do
// not even wake the thread, so the file holds no row and the log all of them.
TEST_F(WalCheckpointerTest, WhileTheProgramRunsTheLogIsCopiedOnlyOnceItIsLarge) {
  auto share = std::make_shared<CpuShare>();
  share->limited.store(true);
  ASSERT_NO_FATAL_FAILURE(attach(share, /*deferred_wal_pages=*/1000));
  commit_rows(writer_, 20);  // ~2 MB of 4 KiB pages: about 600 pages of log
  EXPECT_EQ(checkpointer_->checkpoints(), 0u);
  EXPECT_LT(file_size(), 100'000u);
  EXPECT_GT(log_size(), 2'000'000u);
  commit_rows(writer_, 20);  // past 1,000 pages: now the thread copies
  ASSERT_TRUE(wait_for_checkpoint(*checkpointer_));
  checkpointer_.reset();
  EXPECT_GT(file_size(), 2'000'000u);
}

// Once the program has ended, the next commit has the thread copy the whole log.
TEST_F(WalCheckpointerTest, TheLogHeldWhileTheProgramRanIsCopiedAfterIt) {
  auto share = std::make_shared<CpuShare>();
  share->limited.store(true);
  ASSERT_NO_FATAL_FAILURE(attach(share));
  commit_rows(writer_, 20);
  EXPECT_EQ(checkpointer_->checkpoints(), 0u);
  EXPECT_LT(file_size(), 100'000u);
  share->limited.store(false);  // the program has ended
  commit_rows(writer_, 1);
  ASSERT_TRUE(wait_for_checkpoint(*checkpointer_));
  checkpointer_.reset();  // joins: every requested checkpoint has run
  EXPECT_GT(file_size(), 2'000'000u);
  const auto [log, done] = wal_state(writer_);
  EXPECT_EQ(done, log);
}

}  // namespace
}  // namespace memtap
