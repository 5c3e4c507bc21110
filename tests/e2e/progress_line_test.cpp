// The progress line (common/terminal_progress.h): memtap's long work (reading a large
// recording, finishing one after the program ended) redraws one line on the user's
// terminal and clears it at the end; into a pipe, or while MEMTAP_PROGRESS_MS asks for the
// machine-readable lines, or on a dumb terminal, it says nothing at all.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/terminal_runner.h"

namespace memtap::e2e {
namespace {

// Rows enough for memtap to take a moment over them (over a second of reading and analysing,
// against the line's first drawing at a quarter of a second), written by SQL alone: row n
// allocates block n/2, or frees the block allocated 1,024 blocks earlier.
constexpr int kRows = 1500000;

void write_big_recording(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string sql =
      "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
      "CREATE TABLE memscope_dump (\"ID\" INTEGER PRIMARY KEY, \"Event\" TEXT, \"Event Type\" "
      "TEXT, \"Name\" TEXT, \"Timestamp(ns)\" INTEGER, \"Process Id\" INTEGER, \"Thread Id\" "
      "INTEGER, \"Device Id\" TEXT, \"Ptr\" TEXT, \"Attr\" TEXT, \"Call Stack(Python)\" TEXT, "
      "\"Call Stack(C)\" TEXT);"
      "WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r WHERE n + 1 < " +
      std::to_string(kRows) +
      "), b(n, k) AS (SELECT n, CASE WHEN n % 2 = 0 THEN n / 2 ELSE (n - 1) / 2 - 1023 END "
      "FROM r) INSERT INTO memscope_dump SELECT n, CASE WHEN n % 2 = 0 THEN 'MALLOC' ELSE "
      "'FREE' END, 'HOST', 'N/A', 1700000000000000000 + n * 100, 7, 7, 'cpu', "
      "printf('0x%016x', 65536 + (k % 1024) * 8192), "
      "printf('{\"allocation_id\":\"%d\",\"addr\":\"0x%016x\",\"size\":\"%d\"}', k + 1, "
      "65536 + (k % 1024) * 8192, 16 + k % 4000), '', '' FROM b WHERE k >= 0;";
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// `env`: TERM among them, as in the user's terminal.
ProcessSpec memtap_spec(const TempDir& dir, std::vector<std::string> args,
                        std::vector<std::string> env = {"TERM=xterm"}) {
  args.insert(args.begin(), kMemtapBin);
  ProcessSpec spec = spec_in(dir, args);
  spec.env_unset.push_back("MEMTAP_PROGRESS_MS");
  spec.env_unset.push_back("TERM");
  for (std::string& kv : env) spec.env_set.push_back(std::move(kv));
  return spec;
}

// Whether the terminal's line was drawn and then cleared: `terminal` ends with the line
// overwritten by spaces, "...\r<spaces>\r".
bool drawn_then_cleared(const std::string& terminal) {
  if (terminal.size() < 2 || terminal.back() != '\r') return false;
  const size_t before = terminal.rfind('\r', terminal.size() - 2);
  if (before == std::string::npos || before + 2 >= terminal.size()) return false;
  return terminal.find_first_not_of(' ', before + 1) == terminal.size() - 1;
}

// Whether a line of `phase` counted part of a known total: "<phase>: 1.20M of 1.50M rows
// (80%)", a percentage from 1 to 100.
bool drew_counted(const std::string& terminal, const std::string& phase, const std::string& unit) {
  const std::string start = "\rmemtap: " + phase + ": ";
  for (size_t at = terminal.find(start); at != std::string::npos;
       at = terminal.find(start, at + 1)) {
    const std::string line = terminal.substr(at + 1, terminal.find('\r', at + 1) - at - 1);
    const size_t open = line.find(" " + unit + " (");
    if (line.find(" of ") == std::string::npos || open == std::string::npos) continue;
    const int percent = atoi(line.c_str() + open + unit.size() + 3);
    if (percent >= 1 && percent <= 100 && line.find("%)", open) != std::string::npos) return true;
  }
  return false;
}

TEST(ProgressLine, CommandsReadingALargeRecordingCountItsRowsOnTheTerminalThenClearTheLine) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("big.db");
  write_big_recording(db);
  // What each says once the rows are read (the events it went through; export counts none).
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"analysing", {"report", db}},
      {"replaying", {"replay", db, "--speed", "max"}},
      {"", {"export", db, "--format", "msmemscope-csv", "-o", dir.file("big.csv")}}};
  for (const auto& [after, args] : commands) {
    SCOPED_TRACE(args[0]);
    const ProcessResult r = run_on_terminal(memtap_spec(dir, args), kProcessTimeout);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
    // A fast machine may have read the rows before the line's first drawing.
    EXPECT_TRUE(drew_counted(r.err, "reading big.db", "rows") ||
                (!after.empty() && drew_counted(r.err, after + " big.db", "events")))
        << r.err;
    // One line, redrawn in place and cleared before anything else reached the terminal
    // (export's last word on what it wrote).
    const size_t line_end = r.err.rfind('\r') + 1;
    EXPECT_TRUE(drawn_then_cleared(r.err.substr(0, line_end))) << r.err;
    EXPECT_EQ(r.err.substr(0, line_end).find('\n'), std::string::npos) << r.err;
    if (args[0] == "export") {
      EXPECT_EQ(r.err.substr(line_end).rfind("memtap export: wrote ", 0), 0u) << r.err;
    } else {
      EXPECT_EQ(r.err.substr(line_end), "") << r.err;
      EXPECT_NE(r.out.find("Allocated"), std::string::npos) << r.out;
    }
  }
}

TEST(ProgressLine, NothingIsDrawnIntoAPipeOnADumbTerminalOrBesideTheMachineLines) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("big.db");
  write_big_recording(db);
  const ProcessResult piped = run_process(memtap_spec(dir, {"report", db}), kProcessTimeout);
  ASSERT_TRUE(piped.exited && piped.exit_code == 0) << describe(piped) << piped.err;
  EXPECT_EQ(piped.err, "");
  EXPECT_NE(piped.out.find("Allocated"), std::string::npos) << piped.out;
  for (const std::vector<std::string>& env : std::vector<std::vector<std::string>>{
           {"TERM=dumb"}, {"TERM=xterm", "MEMTAP_PROGRESS_MS=100"}}) {
    SCOPED_TRACE(env.back());
    const ProcessResult r = run_on_terminal(memtap_spec(dir, {"report", db}, env), kProcessTimeout);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
    EXPECT_EQ(r.err, "");
  }
}

// `memtap run` of a program that allocated millions of times: after it ends, the writing and
// msMemScope's indexes take seconds, which the line shows before the summary; into a pipe
// the summary alone.
TEST(ProgressLine, RunShowsTheRecordingBeingFinishedOnTheTerminalOnly) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::vector<std::string> program = {"/usr/bin/python3", "-c",
                                            "for i in range(1000000): bytearray(1000)"};
  auto run_args = [&](const std::string& db) {
    std::vector<std::string> args = {"run", "-o", db, "--"};
    args.insert(args.end(), program.begin(), program.end());
    return args;
  };
  const ProcessResult r =
      run_on_terminal(memtap_spec(dir, run_args(dir.file("t.db"))), std::chrono::seconds(180));
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE(r.err.find("\rmemtap: building msMemScope's indexes... "), std::string::npos) << r.err;
  // Cleared before the summary: it starts on a clean line.
  const size_t summary = r.err.find("memtap: recording written to");
  ASSERT_NE(summary, std::string::npos) << r.err;
  EXPECT_TRUE(drawn_then_cleared(r.err.substr(0, summary))) << r.err;
  EXPECT_EQ(r.err.find("writing the remaining"), std::string::npos) << r.err;

  const ProcessResult piped =
      run_process(memtap_spec(dir, run_args(dir.file("p.db"))), std::chrono::seconds(180));
  ASSERT_TRUE(piped.exited && piped.exit_code == 0) << describe(piped) << piped.err;
  EXPECT_NE(piped.err.find("memtap: recording written to"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("msMemScope's indexes"), std::string::npos) << piped.err;
}

}  // namespace
}  // namespace memtap::e2e
