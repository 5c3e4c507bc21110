// MemscopeWriter when the file cannot be made or stops growing: no crash, one message that
// names the file and the reason, never a file that looks complete, and a recording that
// stops where the disk refused, holding no row in memory from then on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "monitor/store/memscope_writer.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

using test::Db;
using test::exists;
using test::in_child_with_file_size_limit;
using test::TempDir;

std::vector<DumpRow> malloc_rows(size_t count) {
  std::vector<DumpRow> rows(count);
  for (size_t i = 0; i < count; ++i) {
    rows[i].event = DumpEvent::kMalloc;
    rows[i].timestamp_ns = static_cast<int64_t>(1000 + i);
    rows[i].process_id = 7;
    rows[i].thread_id = 7;
    rows[i].ptr = 0x7f0000000000 + 64 * i;
    rows[i].size_bytes = 64;
    rows[i].allocation_id = i + 1;
  }
  return rows;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Waits until the writer's thread has stopped the recording (it does so on its own thread,
// as it meets the error); false after 20 s.
bool wait_stopped(const MemscopeWriter& writer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (writer.stopped().reason.empty()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

int64_t file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : -1;
}

TEST(MemscopeWriterErrors, CreateFailsInMissingDirectory) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("no/such/dir/memscope_dump_1.db");
  std::string error;
  EXPECT_EQ(MemscopeWriter::create(path, &error), nullptr);
  EXPECT_TRUE(contains(error, path + ".partial")) << error;
  EXPECT_TRUE(contains(error, "does not exist")) << error;
  EXPECT_FALSE(contains(error, "\n")) << error;
}

TEST(MemscopeWriterErrors, CreateFailsWhenTheDirectoryIsAFile) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::ofstream(dir.file("plain")) << "x";
  const std::string path = dir.file("plain/memscope_dump_1.db");
  std::string error;
  EXPECT_EQ(MemscopeWriter::create(path, &error), nullptr);
  EXPECT_TRUE(contains(error, path + ".partial")) << error;
  EXPECT_TRUE(contains(error, "not a directory")) << error;
}

// Permission bits do not stop root, so when the test runs as root, create() runs in a
// forked child that has given up root for the `nobody` user.
TEST(MemscopeWriterErrors, CreateFailsInUnwritableDirectory) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string readonly = dir.file("readonly");
  ASSERT_EQ(mkdir(readonly.c_str(), 0555), 0);
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);  // mkdtemp's 0700 would hide it from nobody
  const std::string path = readonly + "/memscope_dump_1.db";

  enum ChildExit { kReported = 0, kCannotDropRoot = 2, kPermissionsIgnored = 3 };
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(kCannotDropRoot);
    const std::string probe = readonly + "/probe";
    const int fd = open(probe.c_str(), O_CREAT | O_WRONLY, 0600);
    if (fd >= 0) _exit(kPermissionsIgnored);
    std::string error;
    if (MemscopeWriter::create(path, &error) != nullptr) error = "<created>";
    const ssize_t written = write(pipe_fds[1], error.data(), error.size());
    _exit(written == static_cast<ssize_t>(error.size()) ? kReported : 1);
  }
  close(pipe_fds[1]);
  std::string error;
  char buffer[512];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) error.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kCannotDropRoot) GTEST_SKIP() << "cannot switch to user nobody";
  if (WEXITSTATUS(status) == kPermissionsIgnored) {
    GTEST_SKIP() << "this user can write to a mode 0555 directory";
  }
  ASSERT_EQ(WEXITSTATUS(status), kReported);
  EXPECT_TRUE(contains(error, path + ".partial")) << error;
  EXPECT_TRUE(contains(error, "not writable")) << error;
  EXPECT_TRUE(contains(error, "Permission denied")) << error;
  EXPECT_FALSE(exists(path + ".partial"));
}

TEST(MemscopeWriterErrors, CreateFailsWhenThePartialFileCannotBeReplaced) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_1.db");
  // A directory where the file should go: neither unlink() nor SQLite can take its place.
  ASSERT_EQ(mkdir((path + ".partial").c_str(), 0755), 0);
  std::ofstream(path + ".partial/keep") << "x";
  std::string error;
  EXPECT_EQ(MemscopeWriter::create(path, &error), nullptr);
  EXPECT_TRUE(contains(error, path + ".partial")) << error;
  EXPECT_TRUE(contains(error, "Is a directory")) << error;
  EXPECT_TRUE(exists(path + ".partial/keep"));  // someone else's data is left alone
}

// PRAGMA max_page_count makes SQLite stop growing the file and return SQLITE_FULL from
// the same code paths as a full disk, which a test cannot arrange without root.
TEST(MemscopeWriterErrors, DiskFullMakesFinishFailAndKeepsThePartial) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_1.db");
  MemscopeWriterOptions options;
  options.rows_per_transaction = 1000;
  options.max_page_count = 64;  // 256 KiB: room for about 2000 rows
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  const std::vector<DumpRow> rows = malloc_rows(20000);
  for (size_t at = 0; at < rows.size(); at += 500) writer->append(&rows[at], 500);

  EXPECT_FALSE(writer->finish({}, {{"k", "v"}}, &error));
  EXPECT_TRUE(contains(error, path + ".partial")) << error;
  EXPECT_TRUE(contains(error, "rows up to ")) << error;
  EXPECT_TRUE(contains(error, "database or disk is full [SQLITE_FULL]")) << error;
  EXPECT_TRUE(contains(error, " of 20000 rows not written")) << error;
  EXPECT_FALSE(contains(error, "\n")) << error;
  EXPECT_EQ(writer->rows_queued(), 20000u);
  const uint64_t written = writer->rows_written();
  EXPECT_GT(written, 0u);
  EXPECT_LT(written, 20000u);
  EXPECT_EQ(written % 1000, 0u);  // whole transactions or nothing
  EXPECT_TRUE(contains(error, std::to_string(20000 - written) + " of 20000")) << error;

  EXPECT_FALSE(exists(path));
  ASSERT_TRUE(exists(path + ".partial"));
  Db db(path + ".partial");
  EXPECT_EQ(db.value("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump"), std::to_string(written));
  EXPECT_EQ(db.value("SELECT max(ID) FROM memscope_dump"), std::to_string(written - 1));
  // Where it stopped, in the file (the room came from the reserve), and never `complete`.
  EXPECT_EQ(db.value("SELECT count(*) FROM memtap_meta WHERE key = 'complete'"), "0");
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'k'"), "v");
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'rows_recorded'"),
            std::to_string(written));
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'rows_not_recorded'"),
            std::to_string(20000 - written));
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'recorded_until_ns'"),
            std::to_string(1000 + written - 1));
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'recording_stopped_disk_full'"),
            "1");
  EXPECT_TRUE(contains(db.value("SELECT value FROM memtap_meta WHERE key = 'recording_stopped'"),
                       path + ".partial: database or disk is full [SQLITE_FULL]"));

  const RecordingStop stop = writer->stopped();
  EXPECT_TRUE(contains(stop.reason, path + ".partial: database or disk is full [SQLITE_FULL]"))
      << stop.reason;
  EXPECT_TRUE(contains(stop.reason, "free on its file system")) << stop.reason;
  EXPECT_TRUE(stop.disk_full);
  EXPECT_EQ(stop.rows_recorded, written);
  EXPECT_EQ(stop.rows_not_recorded, 20000 - written);
  EXPECT_EQ(stop.first_ns, 1000);
  EXPECT_EQ(stop.recorded_until_ns, int64_t(1000 + written - 1));
  EXPECT_GT(stop.stopped_ns, 0);
}

// Once the recording stopped, nothing waits for the disk: a flood after it leaves no row
// in memory and no queue on disk, only a count.
TEST(MemscopeWriterErrors, RowsAfterTheStopAreCountedNotKept) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_1.db");
  MemscopeWriterOptions options;
  options.rows_per_transaction = 1000;
  options.max_page_count = 64;
  options.max_memory_rows = 4096;  // past it, rows would go to the spool
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  const std::vector<DumpRow> rows = malloc_rows(20000);
  writer->append(rows.data(), rows.size());
  ASSERT_TRUE(wait_stopped(*writer));
  EXPECT_EQ(writer->rows_in_memory(), 0u);
  EXPECT_FALSE(exists(path + ".partial.spool"));
  const uint64_t recorded = writer->stopped().rows_recorded;
  for (int i = 0; i < 100; ++i) writer->append(rows.data(), rows.size());  // 2M rows
  EXPECT_EQ(writer->rows_in_memory(), 0u);
  EXPECT_FALSE(exists(path + ".partial.spool"));
  EXPECT_EQ(writer->stopped().rows_recorded, recorded);
  EXPECT_EQ(writer->stopped().rows_not_recorded, 101 * 20000 - recorded);
  EXPECT_FALSE(writer->finish({}, {}, &error));
  EXPECT_EQ(writer->rows_written(), recorded);
  Db db(path + ".partial");
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'rows_not_recorded'"),
            std::to_string(101 * 20000 - recorded));
}

// The room kept for the file's last words: there while recording, half of it given back
// when the recording stops, the rest in finish(); none left behind.
TEST(MemscopeWriterErrors, TheReserveIsGivenBackInTwoHalves) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_1.db");
  const std::string reserve = path + ".partial.reserve";
  MemscopeWriterOptions options;
  options.rows_per_transaction = 1000;
  options.max_page_count = 64;
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  EXPECT_EQ(file_size(reserve), int64_t(options.reserve_bytes));
  const std::vector<DumpRow> rows = malloc_rows(20000);
  writer->append(rows.data(), rows.size());
  ASSERT_TRUE(wait_stopped(*writer));
  EXPECT_EQ(file_size(reserve), int64_t(options.reserve_bytes / 2));
  EXPECT_FALSE(writer->finish({}, {}, &error));
  EXPECT_FALSE(exists(reserve));

  // A recording that completes leaves none either.
  auto fine = MemscopeWriter::create(dir.file("fine.db"), &error);
  ASSERT_NE(fine, nullptr) << error;
  EXPECT_TRUE(exists(dir.file("fine.db.partial.reserve")));
  fine->append(rows.data(), 10);
  ASSERT_TRUE(fine->finish({}, {}, &error)) << error;
  EXPECT_FALSE(exists(dir.file("fine.db.partial.reserve")));
}

// A writer given 20,000 rows in transactions of `rows_per_transaction`, once a file size
// limit (in_child_with_file_size_limit) has stopped it; null, and *error says why, if it
// did not stop.
std::unique_ptr<MemscopeWriter> stopped_by_the_limit(const std::string& path,
                                                     size_t rows_per_transaction,
                                                     std::string* error) {
  MemscopeWriterOptions options;
  options.rows_per_transaction = rows_per_transaction;
  auto writer = MemscopeWriter::create(path, options, error);
  if (writer == nullptr) {
    *error = "create: " + *error;
    return nullptr;
  }
  const std::vector<DumpRow> rows = malloc_rows(20000);
  writer->append(rows.data(), rows.size());
  if (!wait_stopped(*writer)) {
    *error = "the recording did not stop";
    return nullptr;
  }
  return writer;
}

// A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes writes fail with EFBIG, a full
// disk for one file. The database's log hits it: SQLite says SQLITE_IOERR with the OS error,
// which stops the recording as a full disk does. In a child: the limit would hold for the
// whole test run.
TEST(MemscopeWriterErrors, AFileSizeLimitStopsTheRecordingAsAFullDiskDoes) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_1.db");
  // 1 MiB: about 5,000 rows, a few transactions.
  const std::string failures = in_child_with_file_size_limit(1024 * 1024, [&]() -> std::string {
    std::string error;
    auto writer = stopped_by_the_limit(path, 1000, &error);
    if (writer == nullptr) return error;
    const RecordingStop stop = writer->stopped();
    std::string out;
    if (!contains(stop.reason, path + ".partial: disk I/O error [SQLITE_IOERR] (File too large") ||
        !contains(stop.reason, "1024 KiB")) {
      out += "reason: " + stop.reason + "; ";
    }
    if (!stop.disk_full) out += "not disk_full; ";
    if (stop.rows_recorded == 0 || stop.rows_recorded >= 20000 || stop.rows_recorded % 1000 != 0) {
      out += "rows_recorded " + std::to_string(stop.rows_recorded) + "; ";
    }
    if (writer->rows_in_memory() != 0) out += "rows still in memory; ";
    if (writer->finish({}, {}, &error)) out += "finish() succeeded; ";
    return out;
  });
  EXPECT_EQ(failures, "");
}

// Under a file size limit the room for the file's last words is kept below the limit, as
// the reserve keeps it on a full disk: the stop and finish() both land, whatever room the
// last transaction happened to leave. Transactions of 50 rows (one page of the log each)
// end within a page of the limit: without room kept, finish()'s write (the processes, the
// session's final counts) did not fit and the file kept the counts of the stop.
TEST(MemscopeWriterErrors, UnderAFileSizeLimitTheFinalCountsStillLand) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_1.db");
  const std::string failures = in_child_with_file_size_limit(1024 * 1024, [&]() -> std::string {
    std::string error;
    auto writer = stopped_by_the_limit(path, 50, &error);
    if (writer == nullptr) return error;
    std::string out;
    const RecordingStop stop = writer->stopped();
    // The user's limit, not the one the writer keeps its room under.
    if (!contains(stop.reason, "the file size limit (ulimit -f) is 1024 KiB") &&
        !contains(stop.reason, "(File too large)")) {
      out += "reason: " + stop.reason + "; ";
    }
    ProcessInfo process;
    process.pid = 7;
    process.ended_by = "exit code 0";
    if (writer->finish({process}, {{"exit_code", "0"}}, &error)) out += "finish() succeeded; ";
    // The limit is the user's again once the file is closed.
    rlimit after{};
    if (getrlimit(RLIMIT_FSIZE, &after) != 0 || after.rlim_cur != 1024 * 1024) {
      out += "the soft limit is " + std::to_string(after.rlim_cur) + " after finish(); ";
    }
    return out;
  });
  EXPECT_EQ(failures, "");
  Db db(path + ".partial");
  const std::string recorded =
      db.value("SELECT value FROM memtap_meta WHERE key = 'rows_recorded'");
  ASSERT_NE(recorded, "<none>");
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'rows_not_recorded'"),
            std::to_string(20000 - std::stoull(recorded)));
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'exit_code'"), "0");
  EXPECT_EQ(db.value("SELECT ended_by FROM memtap_session WHERE pid = 7"), "exit code 0");
}

// While the live analyses are behind, rows queue in the spool; when its disk refuses them
// (here a file size limit: EFBIG), the recording stops at once instead of keeping the rows
// in memory for a disk that may not take them again.
TEST(MemscopeWriterErrors, ASpoolTheDiskRefusesStopsTheRecording) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_1.db");
  const std::string failures = in_child_with_file_size_limit(256 * 1024, [&]() -> std::string {
    MemscopeWriterOptions options;
    options.max_memory_rows = 1000;
    options.live_behind = [] { return true; };  // the writer waits: every row queues
    std::string error;
    auto writer = MemscopeWriter::create(path, options, &error);
    if (writer == nullptr) return "create: " + error;
    const std::vector<DumpRow> rows = malloc_rows(1000);
    // About 15 bytes a row in the spool: the limit comes at about 17,000 rows.
    for (int i = 0; i < 100 && writer->stopped().reason.empty(); ++i) {
      writer->append(rows.data(), rows.size());
    }
    if (!wait_stopped(*writer)) return "the recording did not stop";
    for (int i = 0; i < 1000; ++i) writer->append(rows.data(), rows.size());
    const RecordingStop stop = writer->stopped();
    std::string out;
    if (!contains(stop.reason, path + ".partial.spool: writing rows at byte ") ||
        !contains(stop.reason, "File too large")) {
      out += "reason: " + stop.reason + "; ";
    }
    if (!stop.disk_full) out += "not disk_full; ";
    if (stop.rows_recorded != 0)
      out += "rows_recorded " + std::to_string(stop.rows_recorded) + "; ";
    if (writer->rows_in_memory() != 0) {
      out += std::to_string(writer->rows_in_memory()) + " rows still in memory; ";
    }
    if (exists(path + ".partial.spool")) out += "the spool is still there; ";
    if (stop.rows_not_recorded != writer->rows_queued()) out += "rows_not_recorded; ";
    if (writer->finish({}, {}, &error)) out += "finish() succeeded; ";
    if (!contains(error, "queueing rows on disk: ")) out += "finish: " + error + "; ";
    return out;
  });
  EXPECT_EQ(failures, "");
}

TEST(MemscopeWriterErrors, RowsAppendedAfterAFailureAreCountedAsNotWritten) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  MemscopeWriterOptions options;
  options.rows_per_transaction = 100;
  options.max_page_count = 16;
  std::string error;
  auto writer = MemscopeWriter::create(dir.file("f.db"), options, &error);
  ASSERT_NE(writer, nullptr) << error;
  const std::vector<DumpRow> rows = malloc_rows(5000);
  writer->append(rows.data(), rows.size());
  writer->append(rows.data(), rows.size());
  EXPECT_FALSE(writer->finish({}, {}, &error));
  EXPECT_EQ(writer->rows_queued(), 10000u);
  EXPECT_TRUE(contains(error, std::to_string(10000 - writer->rows_written()) + " of 10000"))
      << error;
}

}  // namespace
}  // namespace memtap
