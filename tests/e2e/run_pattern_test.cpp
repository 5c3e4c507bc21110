// `memtap run -o out.db -- PROGRAM`: the whole path (agent, ZeroMQ, engine, SQLite) checked
// on a program whose every allocation is known (tests/programs/alloc_pattern.h).
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"
#include "tests/e2e/recording_checks.h"

namespace memtap::e2e {
namespace {

class MemtapRun : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  // Runs `memtap run -o <db> [options...] -- argv...` (with `env` added to the
  // environment) and waits for it.
  ProcessResult run(const std::string& db, const std::vector<std::string>& argv,
                    pid_t* memtap_pid = nullptr, const std::vector<std::string>& options = {},
                    const std::vector<std::string>& env = {}) {
    std::vector<std::string> cmd = {kMemtapBin, "run", "-o", db};
    cmd.insert(cmd.end(), options.begin(), options.end());
    cmd.push_back("--");
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    std::string error;
    ProcessSpec spec = spec_in(dir, cmd);
    spec.env_set.insert(spec.env_set.end(), env.begin(), env.end());
    std::unique_ptr<Process> p = Process::start(spec, &error);
    if (!p) {
      ADD_FAILURE() << error;
      return {};
    }
    if (memtap_pid) *memtap_pid = p->pid();
    return p->wait(kProcessTimeout);
  }

  // The allocation pattern recorded whole: every event, in a well-formed file. Returns the
  // run, for more checks.
  ProcessResult check_pattern_recording(const std::string& db,
                                        const std::vector<std::string>& options = {},
                                        const std::vector<std::string>& env = {}) {
    WallWindow window;
    window.begin_ns = realtime_now_ns();
    pid_t memtap_pid = 0;
    ProcessResult r = run(db, {kAllocPattern}, &memtap_pid, options, env);
    window.end_ns = realtime_now_ns();
    EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
    PatternRun pattern;
    std::string error;
    EXPECT_TRUE(parse_pattern_output(r.out, &pattern, &error)) << error;
    pattern.expected_ppid = memtap_pid;
    pattern.command_line = kAllocPattern;
    RecordingData rec;
    EXPECT_TRUE(load_recording(db, &rec, &error)) << error;
    expect_well_formed(rec, window);
    expect_alloc_pattern(rec, pattern);
    return r;
  }

  TempDir dir;
};

TEST_F(MemtapRun, RecordsEveryEventOfTheAllocationPattern) {
  const std::string db = dir.file("pattern.db");
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  pid_t memtap_pid = 0;
  ProcessResult r = run(db, {kAllocPattern}, &memtap_pid);
  window.end_ns = realtime_now_ns();
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;

  PatternRun pattern;
  std::string error;
  ASSERT_TRUE(parse_pattern_output(r.out, &pattern, &error)) << error;
  pattern.expected_ppid = memtap_pid;
  pattern.command_line = kAllocPattern;

  RecordingData rec;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  expect_alloc_pattern(rec, pattern);
  EXPECT_EQ(rec.sessions.size(), 2u) << "the program and its fork() child, nothing else";
  EXPECT_NE(r.err.find(db), std::string::npos) << "the summary names the recording:\n" << r.err;
}

// When SQLite falls behind, rows wait on disk, not in memory, and none is lost: with a
// queue of 64 rows in memory every release of rows goes to disk.
TEST_F(MemtapRun, RecordsEveryEventWhenTheQueueWaitsOnDisk) {
  const std::string db = dir.file("spooled.db");
  ProcessResult r = check_pattern_recording(db, {}, {"MEMTAP_QUEUE_MEMORY_ROWS=64"});
  EXPECT_NE(r.err.find("rows waited on disk until it caught up; none were lost"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(db + ".partial.spool"));
}

// `--compact`: integer rows, memscope_dump a view, every event there all the same.
TEST_F(MemtapRun, RecordsEveryEventCompact) {
  const std::string db = dir.file("compact.db");
  ProcessResult r = check_pattern_recording(db, {"--compact"});
  EXPECT_EQ(r.err.find("waited on disk"), std::string::npos) << r.err;
}

// MEMTAP_PROGRESS_MS: progress lines while recording and catching up; the last one, once
// caught up, has the engine and the writer at the same row, and no process behind.
TEST_F(MemtapRun, ProgressLinesEndCaughtUp) {
  ProcessResult r = run(dir.file("p.db"), {kAllocPattern}, nullptr, {}, {"MEMTAP_PROGRESS_MS=1"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  const std::string prefix = "memtap: progress monotonic_ns=";
  const size_t last = r.err.rfind(prefix);
  ASSERT_NE(last, std::string::npos) << r.err;
  unsigned long long ns = 0, received = 0, analysed = 0, written = 0, spooled = 0;
  ASSERT_EQ(std::sscanf(r.err.c_str() + last,
                        "memtap: progress monotonic_ns=%llu received=%llu analysed=%llu "
                        "written=%llu spooled=%llu",
                        &ns, &received, &analysed, &written, &spooled),
            5)
      << r.err.substr(last);
  EXPECT_GT(received, 0u);
  EXPECT_GE(analysed, received);  // + the rows the monitor adds (START/STOP_TRACE)
  EXPECT_EQ(written, analysed);
  EXPECT_EQ(spooled, 0u);
  const std::string line = r.err.substr(last, r.err.find('\n', last) - last);
  EXPECT_NE(line.find(" agents_behind_ms=0"), std::string::npos) << line;
}

TEST_F(MemtapRun, AQueueSizeThatIsNoNumberIsRefused) {
  ProcessResult r =
      run(dir.file("x.db"), {kAllocPattern}, nullptr, {}, {"MEMTAP_QUEUE_MEMORY_ROWS=lots"});
  EXPECT_TRUE(r.exited && r.exit_code == 2) << describe(r);
  EXPECT_NE(r.err.find("MEMTAP_QUEUE_MEMORY_ROWS='lots': expected a number of rows"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.db")));
}

// The training process comes first, and memtap finishes at full speed once it has ended:
// the monitor's threads stay at the program's priority (a nice value, once raised, cannot
// be lowered again without privilege) and pace themselves while it runs (common/cpu_share.h,
// whose accounting tests/unit/common tests), which the progress lines show: paced=1 while
// the program runs, paced=0 from the moment it has ended.
TEST_F(MemtapRun, MonitorThreadsPaceThemselvesOnlyWhileTheProgramRuns) {
  const std::string script =
      "for t in /proc/$PPID/task/*; do echo monitor $(cut -d' ' -f2,19 $t/stat); done; "
      "echo program $(cut -d' ' -f19 /proc/self/stat); i=0; while [ $i -lt 3000 ]; do "
      "i=$((i+1)); done";
  ProcessResult r =
      run(dir.file("nice.db"), {"/bin/sh", "-c", script}, nullptr, {}, {"MEMTAP_PROGRESS_MS=1"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE(r.out.find("program 0\n"), std::string::npos) << r.out;
  int monitor_threads = 0;
  bool saw_writer = false;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("monitor ", 0) != 0) continue;
    ++monitor_threads;
    // "monitor (name) nice"; thread names here have no spaces
    std::istringstream fields(line.substr(8));
    std::string name;
    int nice = -100;
    fields >> name >> nice;
    saw_writer = saw_writer || name == "(memtap-writer)";
    EXPECT_EQ(nice, 0) << r.out;
  }
  EXPECT_GE(monitor_threads, 2) << r.out;  // the main thread and the writer at least
  EXPECT_TRUE(saw_writer) << r.out;
  // Progress lines: the first ones while the program runs, the last once it has ended.
  std::vector<std::string> paced;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    const size_t at = line.find(" paced=");
    if (line.rfind("memtap: progress ", 0) == 0 && at != std::string::npos) {
      paced.push_back(line.substr(at + 7, 1));
    }
  }
  ASSERT_GE(paced.size(), 2u) << r.err;
  EXPECT_EQ(paced.front(), "1") << r.err;
  EXPECT_EQ(paced.back(), "0") << r.err;
}

// Inside the program, memtap's sender thread steps back too (nice 19; the program's own
// threads keep theirs), once its Hello is out. Its catch-up thread, which takes the rounds
// over when the sender falls behind, keeps the program's nice value, and so do the ZeroMQ
// threads the sender starts (named after the sender's thread id, so that a user tells them
// from a ZeroMQ of the program's own), whose I/O thread writes every batch into the socket:
// behind the program, it held the catch-up thread back with it. The script waits (bounded)
// for the sender to step back and for the other three to have named themselves, which each
// does once it runs.
TEST_F(MemtapRun, TheSenderThreadStepsBackInsideTheProgram) {
  const std::string script =
      "i=0; while [ $i -lt 400 ]; do back=; io=; reaper=; catchup=; for t in /proc/$$/task/*; do "
      "set -- $(cut -d' ' -f2,19 $t/stat); "
      "if [ \"$1\" = '(memtap-sender)' ] && [ \"$2\" = 19 ]; then back=1; fi; "
      "case $1 in *'/ZMQbg/I'*) io=1;; *'/ZMQbg/R'*) reaper=1;; '(memtap-catchup)') catchup=1;; "
      "esac; done; "
      "if [ \"$back$io$reaper$catchup\" = 1111 ]; then "
      "echo sender stepped back; echo program $(cut -d' ' -f19 /proc/$$/stat); "
      "for z in /proc/$$/task/*; do set -- $(cut -d' ' -f2,19 $z/stat); "
      "case $1 in *'/ZMQbg/'*) echo zmq ${1#*/} $2;; '(memtap-catchup)') echo catchup $2;; "
      "esac; done; exit 0; fi; "
      "i=$((i+1)); done; "
      "for t in /proc/$$/task/*; do echo $(cut -d' ' -f2,19 $t/stat); done; exit 1";
  ProcessResult r = run(dir.file("sender_nice.db"), {"/bin/sh", "-c", script});
  ASSERT_TRUE(r.exited) << describe(r) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sender stepped back\nprogram 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("catchup 0\n"), std::string::npos) << r.out;
  // ZeroMQ's I/O thread and reaper, both started by the sender. (Thread names keep 15
  // characters, the sender's thread id first: "IO/0" and "Reaper" may be cut short.)
  EXPECT_NE(r.out.find("zmq ZMQbg/I"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("zmq ZMQbg/R"), std::string::npos) << r.out;
  for (const std::string& line : split_lines(r.out)) {
    if (line.rfind("zmq ", 0) == 0) {
      EXPECT_EQ(line.substr(line.size() - 3), ") 0") << line;
    }
  }
}

// Mallocs on one thread, frees on another, in more records than one batch takes, all sent
// at exit (the drain interval is longer than the program). The sender drains the buffers
// in turn, the freeing thread's first, so its frees leave ahead of the mallocs they free;
// the batches ahead must not tell the monitor that nothing older is coming. Every free is
// then paired with its malloc, and none arrives late.
TEST_F(MemtapRun, FreesOnAnotherThreadPairWhenTheirMallocsComeInALaterBatch) {
  const std::string db = dir.file("handoff.db");
  ProcessResult r = run(db, {kHandoff, "100000"}, nullptr, {}, {"MEMTAP_DRAIN_INTERVAL_US=300000"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  long long pid = 0;
  ASSERT_EQ(sscanf(r.out.c_str(), "pid=%lld", &pid), 1) << r.out;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  const std::string p = std::to_string(pid);
  const std::string rows = "SELECT COUNT(*) FROM memscope_dump WHERE \"Process Id\" = " + p;
  EXPECT_EQ(q->scalar_int(rows + " AND Event = 'MALLOC' AND Attr LIKE '%\"size\":\"48\"%'"),
            100000);
  EXPECT_EQ(q->scalar_int(rows + " AND Event = 'FREE' AND \"Thread Id\" != " + p), 100000);
  EXPECT_EQ(q->scalar_int(rows + " AND Event = 'FREE' AND Attr LIKE '{\"allocation_id\":\"0\"%'"),
            0)
      << "frees with no malloc before them";
  EXPECT_EQ(q->scalar_int("SELECT late_events + unmatched_frees + events_dropped FROM "
                          "memtap_session WHERE pid = " +
                          p),
            0);
}

TEST_F(MemtapRun, ExitsWithTheProgramsExitCode) {
  const std::string db = dir.file("exit7.db");
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  ProcessResult r = run(db, {kAllocPattern, "7"});
  window.end_ns = realtime_now_ns();
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 7) << "stderr:\n" << r.err;

  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  EXPECT_EQ(rec.sessions.size(), 2u);
  EXPECT_EQ(rec.meta["exit_code"], "7");
  // Each process's agent says how it ended: the parent returned 7 from main (exit's status,
  // which an atexit handler never sees), the fork() child called _exit(0).
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  DbRows ended;
  ASSERT_TRUE(
      q->query("SELECT ended_by FROM memtap_session ORDER BY forked_from_pid", {}, &ended, &error))
      << error;
  ASSERT_EQ(ended.rows.size(), 2u);
  EXPECT_EQ(ended.rows[0][0].text, "exit code 7");
  EXPECT_EQ(ended.rows[1][0].text, "exit code 0");
}

// A program killed by a signal: memtap run's exit code is the shell's (128 + the signal),
// the recording's memtap_meta says how it ended by name, and the summary says so. With no
// events at all (the agent kept out with MEMTAP_DISABLE, as for a static program), the
// message tells a crash from a program the agent never entered.
TEST_F(MemtapRun, SaysHowAProgramKilledByASignalEnded) {
  const std::string db = dir.file("killed.db");
  ProcessResult r = run(db, {"/bin/sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_NE(r.err.find("memtap run: '/bin/sh' was killed by SIGTERM"), std::string::npos) << r.err;
  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  EXPECT_EQ(rec.meta["exit_code"], std::to_string(128 + SIGTERM));
  EXPECT_EQ(rec.meta["ended_by"], "signal SIGTERM");

  r = run(dir.file("silent.db"), {"/bin/sh", "-c", "kill -TERM $$"}, nullptr, {},
          {"MEMTAP_DISABLE=1"});
  ASSERT_TRUE(r.exited) << describe(r);
  EXPECT_NE(r.err.find("it was killed by SIGTERM before the agent could send anything"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("not loaded"), std::string::npos) << r.err;

  r = run(dir.file("absent.db"), {kExitCode, "0"}, nullptr, {}, {"MEMTAP_DISABLE=1"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r);
  EXPECT_NE(r.err.find("the agent was not loaded"), std::string::npos) << r.err;
  RecordingData absent;
  ASSERT_TRUE(load_recording(dir.file("absent.db"), &absent, &error)) << error;
  EXPECT_EQ(absent.meta["ended_by"], "exit code 0");
}

// Arguments reach the program unchanged (spaces, empty strings), its output is its own,
// and its exit code comes back: memtap run is transparent.
TEST_F(MemtapRun, PassesArgumentsAndOutputThrough) {
  const std::vector<std::string> argv = {kExitCode, "3", "two words", "", "--", "-o"};
  ProcessResult plain = run_process(spec_in(dir, argv), kProcessTimeout);
  ASSERT_TRUE(plain.exited) << describe(plain);
  ProcessResult traced = run(dir.file("args.db"), argv);
  ASSERT_TRUE(traced.exited) << describe(traced) << "\nstderr:\n" << traced.err;
  EXPECT_EQ(traced.exit_code, 3);
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(traced.out, "argv[0]=" + kExitCode +
                            "\nargv[1]=3\nargv[2]=two words\nargv[3]=\nargv[4]=--\n"
                            "argv[5]=-o\n");
}

// A finished recording is the file itself: no `.partial`, no WAL or shared-memory file,
// and memtap run's private socket is gone.
TEST_F(MemtapRun, LeavesOnlyTheFinishedDatabase) {
  ProcessResult r = run(dir.file("only.db"), {kAllocPattern});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  std::vector<std::string> left = dir.entries();
  std::vector<std::string> sockets;
  if (std::filesystem::is_directory(dir.file("memtap"))) {
    for (const auto& e : std::filesystem::directory_iterator(dir.file("memtap")))
      sockets.push_back(e.path().filename().string());
    left.erase(std::find(left.begin(), left.end(), "memtap"));
  }
  EXPECT_EQ(left, std::vector<std::string>{"only.db"});
  EXPECT_EQ(sockets, std::vector<std::string>{}) << "memtap run's socket should be removed";
}

}  // namespace
}  // namespace memtap::e2e
