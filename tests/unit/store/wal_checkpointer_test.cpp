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

TEST(WalCheckpointer, TheThreadCopiesTheLogAfterCommits) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("w.db");
  sqlite3* writer = open_wal(path);
  std::string error;
  auto checkpointer = WalCheckpointer::start(path, nullptr, &error);
  ASSERT_NE(checkpointer, nullptr) << error;
  checkpointer->attach(writer);
  commit_rows(writer, 20);  // ~2 MB: SQLite alone would have checkpointed at 1000 pages
  // Wait (bounded) for the thread to have run after the last commit.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (checkpointer->checkpoints() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_GT(checkpointer->checkpoints(), 0u);
  checkpointer.reset();  // joins: every requested checkpoint has run
  // The thread's copies, not the writer's: the file holds the rows before the writer's own
  // connection checkpoints anything (its first checkpoint is wal_state's, below). A thread
  // whose checkpoints copy nothing leaves the file at its header page.
  EXPECT_GT(std::filesystem::file_size(path), 2'000'000u);
  const auto [log, done] = wal_state(writer);
  EXPECT_GT(log, 0);
  EXPECT_EQ(done, log);
  sqlite3_close(writer);
}

TEST(WalCheckpointer, AnAttachedWriterNoLongerCheckpointsByItself) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("w.db");
  sqlite3* writer = open_wal(path);
  std::string error;
  auto checkpointer = WalCheckpointer::start(path, nullptr, &error);
  ASSERT_NE(checkpointer, nullptr) << error;
  checkpointer->attach(writer);
  checkpointer.reset();     // gone before any commit: nobody copies the log
  commit_rows(writer, 60);  // ~6 MB, 1,500 pages: SQLite alone checkpoints at 1,000
  // The log was never restarted: it holds every page written.
  EXPECT_GT(std::filesystem::file_size(path + "-wal"), 6'000'000u);
  sqlite3_close(writer);
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

// While the program runs the log is left to grow, up to the deferred size: the commits do
// not even wake the thread, so the file holds no row and the log all of them.
TEST(WalCheckpointer, WhileTheProgramRunsTheLogIsCopiedOnlyOnceItIsLarge) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("w.db");
  sqlite3* writer = open_wal(path);
  auto share = std::make_shared<CpuShare>();
  share->limited.store(true);
  std::string error;
  auto checkpointer = WalCheckpointer::start(path, share, &error, /*deferred_wal_pages=*/1000);
  ASSERT_NE(checkpointer, nullptr) << error;
  checkpointer->attach(writer);
  commit_rows(writer, 20);  // ~2 MB of 4 KiB pages: about 600 pages of log
  EXPECT_EQ(checkpointer->checkpoints(), 0u);
  EXPECT_LT(std::filesystem::file_size(path), 100'000u);
  EXPECT_GT(std::filesystem::file_size(path + "-wal"), 2'000'000u);
  commit_rows(writer, 20);  // past 1,000 pages: now the thread copies
  ASSERT_TRUE(wait_for_checkpoint(*checkpointer));
  checkpointer.reset();
  EXPECT_GT(std::filesystem::file_size(path), 2'000'000u);
  sqlite3_close(writer);
}

// Once the program has ended, the next commit has the thread copy the whole log.
TEST(WalCheckpointer, TheLogHeldWhileTheProgramRanIsCopiedAfterIt) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("w.db");
  sqlite3* writer = open_wal(path);
  auto share = std::make_shared<CpuShare>();
  share->limited.store(true);
  std::string error;
  auto checkpointer = WalCheckpointer::start(path, share, &error);
  ASSERT_NE(checkpointer, nullptr) << error;
  checkpointer->attach(writer);
  commit_rows(writer, 20);
  EXPECT_EQ(checkpointer->checkpoints(), 0u);
  EXPECT_LT(std::filesystem::file_size(path), 100'000u);
  share->limited.store(false);  // the program has ended
  commit_rows(writer, 1);
  ASSERT_TRUE(wait_for_checkpoint(*checkpointer));
  checkpointer.reset();  // joins: every requested checkpoint has run
  EXPECT_GT(std::filesystem::file_size(path), 2'000'000u);
  const auto [log, done] = wal_state(writer);
  EXPECT_EQ(done, log);
  sqlite3_close(writer);
}

}  // namespace
}  // namespace memtap
