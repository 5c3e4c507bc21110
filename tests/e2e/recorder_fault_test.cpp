// The recorder killed mid-session: the program it traced carries on, the `.partial` file it
// leaves opens and says it was cut, and `memtap recover` makes it a finished recording
// holding everything that was committed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

// Allocates 500 blocks of 100,000 bytes, says so, then waits for a line on stdin before it
// allocates 10 more and exits 0.
const char kProgram[] =
    "import sys\n"
    "keep = [bytearray(100000) for _ in range(500)]\n"
    "print('allocated', flush=True)\n"
    "sys.stdin.readline()\n"
    "keep += [bytearray(100000) for _ in range(10)]\n"
    "print('done', flush=True)\n";

const char kBigBlocks[] =
    "SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC' AND "
    "CAST(json_extract(Attr, '$.size') AS INTEGER) BETWEEN 100000 AND 100200";

int64_t scalar(const std::string& db, const std::string& sql) {
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  return q ? q->scalar_int(sql) : -1;
}

ProcessResult memtap(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), kMemtapBin);
  return run_process(spec_in(dir, args), kProcessTimeout);
}

TEST(RecorderFault, AKilledRecordersPartialFileSaysSoAndRecoverFinishesIt) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string endpoint = "ipc://" + dir.file("rec.sock");
  const std::string db = dir.file("cut.db");
  const std::string partial = db + ".partial";
  std::unique_ptr<Process> recorder = start_recorder(dir, endpoint, db);
  ASSERT_TRUE(recorder);

  ProcessSpec spec = preloaded_spec(dir, {"/usr/bin/python3", "-c", kProgram}, endpoint);
  spec.pipe_stdin = true;
  std::string error;
  std::unique_ptr<Process> program = Process::start(spec, &error);
  ASSERT_TRUE(program) << error;
  ASSERT_TRUE(program->wait_for_output(
      [](const std::string& out, const std::string&) { return out == "allocated\n"; },
      kProcessTimeout))
      << program->out() << program->err();
  // The writer commits at least every second: wait until the 500 blocks are in the file.
  ASSERT_TRUE(poll_until([&] { return scalar(partial, kBigBlocks) >= 500; }, kProcessTimeout));
  ASSERT_TRUE(recorder->signal(SIGKILL));
  ProcessResult killed = recorder->wait(kProcessTimeout);
  ASSERT_EQ(killed.term_signal, SIGKILL) << describe(killed);

  // The program goes on as if nothing happened.
  ASSERT_TRUE(program->write_stdin("go\n"));
  program->close_stdin();
  ProcessResult r = program->wait(kProcessTimeout);
  ASSERT_TRUE(r.exited) << describe(r) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "allocated\ndone\n");

  ASSERT_TRUE(std::filesystem::exists(partial));
  EXPECT_FALSE(std::filesystem::exists(db));
  const int64_t rows = scalar(partial, "SELECT COUNT(*) FROM memscope_dump");
  ASSERT_GE(rows, 500);

  ProcessResult report = memtap(dir, {"report", partial});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("not finished"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("memtap recover " + partial), std::string::npos) << report.out;
  ProcessResult json = memtap(dir, {"report", "--json", partial});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"unfinished\":true"), std::string::npos) << json.out;

  ProcessResult recovered = memtap(dir, {"recover", partial});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.err;
  EXPECT_NE(recovered.err.find(db + ": " + count_said(rows) + " events of 1 process"),
            std::string::npos)
      << recovered.err;
  EXPECT_FALSE(std::filesystem::exists(partial));
  ASSERT_TRUE(std::filesystem::exists(db));
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM memscope_dump"), rows);
  EXPECT_GE(scalar(db, kBigBlocks), 500);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM memtap_meta WHERE key = 'complete' AND value = '1'"),
            1);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM memtap_meta WHERE key = 'recovered'"), 1);
  EXPECT_EQ(scalar(db,
                   "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = "
                   "'memscope_dump'"),
            3)
      << "the timestamp index built, the partial device and event indexes kept";
  EXPECT_EQ(scalar(db, "SELECT events_received FROM memtap_session"), rows);
  report = memtap(dir, {"report", "--json", db});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("\"unfinished\":false"), std::string::npos) << report.out;

  // Twice, or on a finished file: a message naming the file, nothing touched.
  ProcessResult again = memtap(dir, {"recover", partial});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find(partial + ": No such file or directory"), std::string::npos)
      << again.err;
  ProcessResult finished = memtap(dir, {"recover", db, "-o", dir.file("other.db")});
  EXPECT_EQ(finished.exit_code, 1);
  EXPECT_NE(finished.err.find(db + ": the recording is finished already"), std::string::npos)
      << finished.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("other.db")));
}

// The monitor killed while it built the indexes, the last step of finishing: the `.partial`
// is in rollback-journal mode by then, and the transaction it was in leaves a hot journal,
// which a read-only reader cannot roll back. The reader says what to run, and
// `memtap recover` rolls it back and finishes the file.
TEST(RecorderFault, KilledWhileBuildingTheIndexesRecoverRollsBackAndFinishes) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("cut.db");
  const std::string partial = db + ".partial";
  ProcessResult run = memtap(dir, {"run", "-o", db, "--", "/usr/bin/python3", "-c",
                                   "keep = [bytearray(100000) for _ in range(200)]"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const int64_t rows = scalar(db, "SELECT COUNT(*) FROM memscope_dump");
  ASSERT_GT(rows, 200);

  // The file as finish() has it when it starts the indexes: rows in, log switched off, no
  // indexes, no memtap_session, not complete.
  {
    sqlite3* handle = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(handle,
                           "DROP INDEX idx_memscope_dump_timestamp; DROP INDEX "
                           "idx_memscope_dump_event; DROP INDEX idx_memscope_dump_device; "
                           "DELETE FROM memtap_session; DELETE FROM memtap_meta WHERE key = "
                           "'complete'; PRAGMA journal_mode=DELETE",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(handle);
    sqlite3_close(handle);
  }
  std::filesystem::rename(db, partial);
  // A process that dies inside the indexes' transaction, with a cache so small that pages it
  // changed are already in the file.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sqlite3* handle = nullptr;
    if (sqlite3_open(partial.c_str(), &handle) != SQLITE_OK) _exit(2);
    const int rc = sqlite3_exec(handle,
                                "PRAGMA cache_size=2; BEGIN; INSERT INTO memtap_meta VALUES "
                                "('complete', '1'); CREATE INDEX idx_memscope_dump_timestamp ON "
                                "memscope_dump (\"Timestamp(ns)\")",
                                nullptr, nullptr, nullptr);
    _exit(rc == SQLITE_OK ? 0 : 3);  // no COMMIT, no close: as SIGKILL would leave it
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(std::filesystem::exists(partial + "-journal"));

  ProcessResult report = memtap(dir, {"report", partial});
  EXPECT_NE(report.exit_code, 0);
  EXPECT_NE(report.err.find(partial + ": the monitor was stopped while it finished this recording"),
            std::string::npos)
      << report.err;
  EXPECT_NE(report.err.find("'memtap recover " + partial + "'"), std::string::npos) << report.err;

  ProcessResult recovered = memtap(dir, {"recover", partial});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.err;
  EXPECT_FALSE(std::filesystem::exists(partial));
  EXPECT_FALSE(std::filesystem::exists(partial + "-journal"));
  ASSERT_TRUE(std::filesystem::exists(db));
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM memscope_dump"), rows);
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM memtap_meta WHERE key = 'complete' AND value = '1'"),
            1);
  EXPECT_EQ(scalar(db,
                   "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = "
                   "'memscope_dump'"),
            3);
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  DbRows check;
  ASSERT_TRUE(q->query("PRAGMA integrity_check", {}, &check, &error)) << error;
  ASSERT_EQ(check.rows.size(), 1u);
  EXPECT_EQ(check.rows[0][0].text, "ok");
  report = memtap(dir, {"report", db});
  EXPECT_EQ(report.exit_code, 0) << report.err;
}

}  // namespace
}  // namespace memtap::e2e
