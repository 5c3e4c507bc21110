// MemscopeWriter when the file cannot be made or stops growing: no crash, one message that
// names the file and the reason, and never a file that looks complete.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "monitor/store/memscope_writer.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

using test::Db;
using test::exists;
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
  EXPECT_TRUE(contains(error, "row ")) << error;
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
  EXPECT_EQ(db.value("SELECT count(*) FROM memtap_meta"), "0");
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
