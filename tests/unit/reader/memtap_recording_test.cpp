// A recording made by the real `memtap run` reads back whole: as many MALLOC and FREE
// events as the file has rows, the same bytes, and its processes from memtap_session.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "monitor/store/memscope_schema.h"
#include "monitor/store/memscope_writer.h"
#include "monitor/store/memtap_tables.h"
#include "tests/unit/reader/reader_test_support.h"

extern char** environ;

namespace memtap {
namespace {

using test::count_kind;
using test::read_ok;
using test::TempDir;

// Runs `argv` (under timeout(1), so a hang fails instead of stalling the suite) with its
// output discarded; the exit status.
int run_quietly(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/usr/bin/timeout", "120"});
  std::vector<char*> args;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A finished recording of a few rows, for the tests that need one.
std::string write_recording_for_stop_test(const TempDir& dir) {
  const std::string path = dir.file("memscope_dump_20260101000002.db");
  std::string error;
  auto writer = MemscopeWriter::create(path, &error);
  if (writer == nullptr) return error;
  DumpRow row;
  row.event = DumpEvent::kMalloc;
  row.timestamp_ns = 1000;
  row.process_id = row.thread_id = 7;
  row.ptr = 0x1000;
  row.size_bytes = 64;
  row.allocation_id = 1;
  writer->append(&row, 1);
  return writer->finish({}, {}, &error) ? path : error;
}

TEST(MemtapRecording, ReadsBackEveryRow) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_20260101000000.db");
  // sh forks and execs ls: two processes, each with its session row.
  ASSERT_EQ(run_quietly({MEMTAP_BIN, "run", "-o", path, "--", "/bin/sh", "-c",
                         "/bin/ls / >/dev/null; true"}),
            0);
  const Recording rec = read_ok(path);
  test::Db db(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(rec.format, "memscope_dump");
  EXPECT_EQ(std::to_string(rec.rows_read), db.value("SELECT count(*) FROM memscope_dump"));
  EXPECT_EQ(rec.rows_skipped, 0u) << rec.warning;
  EXPECT_EQ(std::to_string(count_kind(rec, MemEventKind::kMalloc)),
            db.value("SELECT count(*) FROM memscope_dump WHERE Event = 'MALLOC'"));
  EXPECT_EQ(std::to_string(count_kind(rec, MemEventKind::kFree)),
            db.value("SELECT count(*) FROM memscope_dump WHERE Event = 'FREE'"));
  EXPECT_GT(count_kind(rec, MemEventKind::kMalloc), 100u);
  EXPECT_TRUE(test::time_ordered(rec));

  uint64_t malloc_bytes = 0;
  for (const MemEvent& e : rec.events) {
    if (e.kind == MemEventKind::kMalloc) malloc_bytes += e.size_bytes;
    if (e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree) {
      EXPECT_EQ(e.layer, Layer::kHost);
      EXPECT_EQ(e.device, kHostDevice);
      EXPECT_NE(e.addr, 0u);
      EXPECT_NE(e.allocation_id, 0u);
    }
  }
  EXPECT_EQ(std::to_string(malloc_bytes),
            db.value("SELECT sum(CAST(json_extract(Attr, '$.size') AS INTEGER)) FROM "
                     "memscope_dump WHERE Event = 'MALLOC'"));

  const test::Rows sessions = db.query("SELECT pid, command_line FROM memtap_session");
  ASSERT_EQ(rec.processes.size(), 2u);
  for (const RecordedProcess& process : rec.processes) {
    EXPECT_FALSE(process.hostname.empty());
    bool in_session = false;
    for (const auto& session : sessions) in_session |= session[0] == std::to_string(process.pid);
    EXPECT_TRUE(in_session) << process.pid;
  }
  // The shell and its child, in the order they started (not the order their Hellos came,
  // which races): the child is described by what it became after its exec, and how that
  // ended.
  EXPECT_EQ(rec.processes[0].command_line, "/bin/sh -c /bin/ls / >/dev/null; true");
  EXPECT_EQ(rec.processes[1].command_line, "/bin/ls /");
  EXPECT_EQ(rec.processes[0].ended_by, "exit code 0");
  EXPECT_EQ(rec.processes[1].ended_by, "exit code 0");
}

// A recording a full disk stopped reads back as far as it goes, and says where it stopped.
TEST(MemtapRecording, AStoppedRecordingSaysWhereItStopped) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_20260101000001.db");
  MemscopeWriterOptions options;
  options.rows_per_transaction = 1000;
  options.max_page_count = 64;  // SQLITE_FULL after a few thousand rows, as on a full disk
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  std::vector<DumpRow> rows(20000);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].event = DumpEvent::kMalloc;
    rows[i].timestamp_ns = int64_t(1000000000 + i);
    rows[i].process_id = rows[i].thread_id = 7;
    rows[i].ptr = 0x7f0000000000 + 64 * i;
    rows[i].size_bytes = 64;
    rows[i].allocation_id = i + 1;
  }
  writer->append(rows.data(), rows.size());
  ASSERT_FALSE(writer->finish({}, {}, &error));
  const uint64_t written = writer->rows_written();
  const Recording rec = read_ok(path + ".partial");
  EXPECT_TRUE(rec.unfinished);
  EXPECT_EQ(rec.rows_read, written);
  EXPECT_EQ(rec.stopped.reason, writer->stopped().reason);
  EXPECT_NE(rec.stopped.reason.find("database or disk is full [SQLITE_FULL]"), std::string::npos);
  EXPECT_TRUE(rec.stopped.disk_full);
  EXPECT_EQ(rec.stopped.rows_recorded, written);
  EXPECT_EQ(rec.stopped.rows_not_recorded, 20000 - written);
  EXPECT_EQ(rec.stopped.first_ns, 1000000000);
  EXPECT_EQ(rec.stopped.recorded_until_ns, int64_t(1000000000 + written - 1));
  EXPECT_GT(rec.stopped.stopped_ns, 0);

  // A recording that did not stop says nothing of the kind.
  EXPECT_TRUE(read_ok(write_recording_for_stop_test(dir)).stopped.reason.empty());
}

// A checkpoint that a full disk stopped part way has written page 1 of the file, with the
// page count of the log's last commit, and not the pages that would have grown the file:
// the file looks truncated, and is not, since its pages are in the log beside it.
TEST(MemtapRecording, PagesStillInTheLogAreNotATruncation) {
  TempDir dir;
  const std::string path = dir.file("live.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string schema = std::string("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;") +
                             kCreateMemscopeDumpSql + ";" + memtap_tables_sql() +
                             "PRAGMA wal_checkpoint(TRUNCATE);"
                             "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c "
                             "WHERE i < 1999) INSERT INTO memscope_dump SELECT i, 'MALLOC', "
                             "'HOST', 'N/A', 1000 + i, 7, 7, 'cpu', printf('0x%016x', 4096 + 64 "
                             "* i), '{\"allocation_id\":\"' || (i + 1) || '\",\"size\":\"64\"}', "
                             "'', '' FROM c;";
  ASSERT_EQ(sqlite3_exec(db, schema.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  // The file and its log as they are while the connection holds the log back: copied, with
  // the file's page count raised past its length, as the stopped checkpoint leaves it.
  const std::string copy = dir.file("cut.db");
  std::filesystem::copy_file(path, copy);
  std::filesystem::copy_file(path + "-wal", copy + "-wal");
  sqlite3_close(db);
  std::fstream file(copy, std::ios::in | std::ios::out | std::ios::binary);
  const uint64_t pages = std::filesystem::file_size(copy) / 4096 + 10;
  const char count[4] = {char(pages >> 24), char(pages >> 16), char(pages >> 8), char(pages)};
  file.seekp(28);
  file.write(count, 4);
  file.close();
  const Recording rec = read_ok(copy);
  EXPECT_EQ(rec.rows_read, 2000u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kMalloc), 2000u);
}

}  // namespace
}  // namespace memtap
