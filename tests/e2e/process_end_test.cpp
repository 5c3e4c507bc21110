// How a traced image ends, as the recording tells it (tests/programs/process_end.c, with a
// drain interval of 300 ms so that only the flush that way of ending makes delivers the
// blocks): exec sends what was recorded before it (agent/hooks/exec_hooks.cpp) and the old
// image ends "exec"; an exec that fails leaves tracing as it was; SIGKILL leaves no final
// flush, and the recording, the summary and the report say so.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/wire_forgery.h"

namespace memtap::e2e {
namespace {

const std::string kProcessEnd = MEMTAP_TEST_PROCESS_END;
constexpr int kBlocks = 1000;
// process_end.c: block i of each set has <size> + 2 * i bytes.
constexpr int kFirstSize = 30011;
constexpr int kAfterSize = 40011;
constexpr int kImageSize = 50011;
const std::vector<std::string> kSlowDrain = {"MEMTAP_DRAIN_INTERVAL_US=300000"};

class ProcessEnd : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  ProcessResult run(const std::string& db, const std::vector<std::string>& argv,
                    const std::vector<std::string>& env = {}) {
    std::vector<std::string> cmd = {kMemtapBin, "run", "-o", db, "--"};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    ProcessSpec spec = spec_in(dir, cmd);
    spec.env_set = kSlowDrain;
    spec.env_set.insert(spec.env_set.end(), env.begin(), env.end());
    return run_process(spec, kProcessTimeout);
  }

  static long long pid_of(const ProcessResult& r) {
    long long pid = 0;
    return sscanf(r.out.c_str(), "pid=%lld", &pid) == 1 ? pid : 0;
  }

  // The first "child=<pid>" line's pid; 0 if there is none.
  static long long child_of(const ProcessResult& r) {
    const size_t at = r.out.find("child=");
    return at == std::string::npos ? 0 : std::stoll(r.out.substr(at + 6));
  }

  // How many of the set of blocks starting at `first_size` the recording has for `pid`,
  // each once (-1 if some came twice).
  static int64_t blocks(const DbQuery& q, long long pid, int first_size) {
    const std::string size = "CAST(json_extract(Attr, '$.size') AS INTEGER)";
    const std::string set = "SELECT " + size + " AS s FROM memscope_dump WHERE Event = 'MALLOC'" +
                            " AND \"Process Id\" = " + std::to_string(pid) + " AND s BETWEEN " +
                            std::to_string(first_size) + " AND " +
                            std::to_string(first_size + 2 * (kBlocks - 1)) + " AND (s - " +
                            std::to_string(first_size) + ") % 2 = 0";
    const int64_t all = q.scalar_int("SELECT COUNT(*) FROM (" + set + ")");
    return all == q.scalar_int("SELECT COUNT(DISTINCT s) FROM (" + set + ")") ? all : -1;
  }

  // pid's memtap_session rows in start order: ended_by, command_line, events_dropped,
  // messages_lost, reconnects.
  static DbRows sessions(const DbQuery& q, long long pid) {
    DbRows rows;
    std::string error;
    EXPECT_TRUE(
        q.query("SELECT ended_by, command_line, events_dropped, messages_lost, reconnects "
                "FROM memtap_session WHERE pid = ?1 ORDER BY start_ns",
                {std::to_string(pid)}, &rows, &error))
        << error;
    return rows;
  }

  // The program's blocks before and after the way of ending under test (kFirstSize and
  // kAfterSize), each recorded once, in one whole session of pid's.
  static void expect_both_sets_whole(const DbQuery& q, long long pid, const std::string& err) {
    EXPECT_EQ(blocks(q, pid, kFirstSize), kBlocks) << "stderr:\n" << err;
    EXPECT_EQ(blocks(q, pid, kAfterSize), kBlocks) << "stderr:\n" << err;
    expect_one_whole_session(q, pid, err);
  }

  // pid has one session, which ended "exit code 0" with nothing dropped or lost.
  static void expect_one_whole_session(const DbQuery& q, long long pid, const std::string& err) {
    const DbRows rows = sessions(q, pid);
    ASSERT_EQ(rows.rows.size(), 1u) << err;
    EXPECT_EQ(rows.rows[0][0].text, "exit code 0");
    EXPECT_EQ(rows.rows[0][2].text, "0") << "events dropped";
    EXPECT_EQ(rows.rows[0][3].text, "0") << "messages lost";
  }

  // The program allocates, then execs itself as `mode` says: every block of both images
  // recorded, each image in a row of its own, the first ended by "exec".
  void expect_exec_flushed(const std::string& mode);

  // `mode` (exit-term, exec-term) forks a child that a SIGTERM reaches while a flush runs:
  // the run ends well, and every block of the child's (kAfterSize) is recorded, nothing
  // dropped in any of its sessions, which *rows gets for the test's own checks.
  void expect_child_whole_despite_sigterm(const std::string& mode, DbRows* rows,
                                          const std::vector<std::string>& env = {});

  TempDir dir;
};

// A program that ends while its sender sleeps between drains does not wait out the
// interval: the stop cuts the sleep short, the first one (the clock's second anchor) too.
// With a minute's interval a short program took a minute and a second to exit.
TEST_F(ProcessEnd, AnExitDoesNotWaitOutTheDrainInterval) {
  const std::string db = dir.file("interval.db");
  ProcessSpec spec = spec_in(dir, {kMemtapBin, "run", "-o", db, "--", kAllocPattern});
  spec.env_set.push_back("MEMTAP_DRAIN_INTERVAL_US=60000000");
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = run_process(spec, std::chrono::seconds(120));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_LT(took, std::chrono::seconds(30)) << "the interval is a minute";
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE bye_received = 1 AND "
                          "ended_by = 'exit code 0' AND events_dropped = 0"),
            q->scalar_int("SELECT COUNT(*) FROM memtap_session"))
      << memtap_session_text(*q);
  EXPECT_GT(q->scalar_int("SELECT events_received FROM memtap_session WHERE forked_from_pid = 0"),
            200)
      << "the pattern's blocks, sent by the final flush";
}

// execl, execlp and execle (which the agent turns into execv, execvp and execve) alike.
TEST_F(ProcessEnd, ExecSendsWhatWasRecordedBeforeIt) {
  for (const std::string mode : {"exec", "exec-lp", "exec-le"}) {
    SCOPED_TRACE(mode);
    expect_exec_flushed(mode);
  }
}

void ProcessEnd::expect_exec_flushed(const std::string& mode) {
  const std::string db = dir.file(mode + ".db");
  ProcessResult r = run(db, {kProcessEnd, mode, std::to_string(kBlocks)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  const long long pid = pid_of(r);
  ASSERT_NE(pid, 0) << r.out;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(blocks(*q, pid, kFirstSize), kBlocks) << "stderr:\n" << r.err;
  EXPECT_EQ(blocks(*q, pid, kImageSize), kBlocks);
  // The old image and the new one, each with its own row.
  const DbRows rows = sessions(*q, pid);
  ASSERT_EQ(rows.rows.size(), 2u) << r.err;
  EXPECT_EQ(rows.rows[0][0].text, "exec");
  EXPECT_NE(rows.rows[0][1].text.find(" " + mode + " "), std::string::npos) << rows.rows[0][1].text;
  EXPECT_EQ(rows.rows[1][0].text, "exit code 0");
  EXPECT_NE(rows.rows[1][1].text.find(" image "), std::string::npos) << rows.rows[1][1].text;
  for (const auto& row : rows.rows) {
    EXPECT_EQ(row[2].text, "0") << "events dropped";
    EXPECT_EQ(row[3].text, "0") << "messages lost";
  }
}

// A PATH search, as Python's subprocess makes in a fork() child: execve in 20 directories
// that do not exist, then in the program's own. The first exec flushes everything; after a
// failed one the sender opens a new connection only once there is something to send, so
// the next exec finds nothing to flush. Counted at a PULL socket of the test's own: one
// connection per image, not one per directory tried (22 before the change, each with its
// drain, linger and handshake), and both images' blocks in the recording.
TEST_F(ProcessEnd, APathSearchConnectsOncePerImageNotOncePerDirectory) {
  expect_exec_flushed("exec-search");

  const std::string endpoint = "ipc://" + dir.file("search.sock");
  zmq::context_t ctx;
  zmq::socket_t pull(ctx, zmq::socket_type::pull);
  pull.set(zmq::sockopt::rcvhwm, 0);
  pull.bind(endpoint);
  ASSERT_EQ(zmq_socket_monitor(pull.handle(), "inproc://search-watch", ZMQ_EVENT_ACCEPTED), 0);
  zmq::socket_t watch(ctx, zmq::socket_type::pair);
  watch.connect("inproc://search-watch");
  std::string error;
  std::unique_ptr<Process> proc =
      Process::start(preloaded_spec(dir, {kProcessEnd, "exec-search", "10"}, endpoint), &error);
  ASSERT_TRUE(proc) << error;
  int accepted = 0;
  auto count_accepted = [&] {
    zmq::message_t event, address;
    while (watch.recv(event, zmq::recv_flags::dontwait)) {
      (void)watch.recv(address);  // each event is followed by the peer's address
      ++accepted;
    }
  };
  bool bye = false;
  const auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
  while (!bye && std::chrono::steady_clock::now() < deadline) {
    zmq::pollitem_t items[2] = {{pull.handle(), 0, ZMQ_POLLIN, 0},
                                {watch.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, std::chrono::milliseconds(100));
    count_accepted();
    zmq::message_t msg;
    while (pull.recv(msg, zmq::recv_flags::dontwait)) {
      if (read_header(msg.data(), msg.size()).body == 'y') bye = true;
    }
  }
  const ProcessResult r = proc->wait(kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  ASSERT_TRUE(bye) << "the new image said Bye";
  count_accepted();
  EXPECT_EQ(accepted, 2) << "connections: one for each image";
}

// The same sender goes on after exec returns: same instance (one row), the sequence going
// on over a new connection, nothing lost, and errno is exec's.
TEST_F(ProcessEnd, AFailedExecGoesOnRecording) {
  const std::string db = dir.file("fail.db");
  ProcessResult r = run(db, {kProcessEnd, "exec-fail", std::to_string(kBlocks)});
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("errno=ENOENT\n"), std::string::npos) << r.out;
  const long long pid = pid_of(r);
  ASSERT_NE(pid, 0) << r.out;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  expect_both_sets_whole(*q, pid, r.err);
  EXPECT_EQ(
      q->scalar_int("SELECT reconnects FROM memtap_session WHERE pid = " + std::to_string(pid)), 0);
  EXPECT_EQ(q->scalar_int(
                "SELECT CAST(value AS INTEGER) FROM memtap_meta WHERE key = 'rejected_messages'"),
            0);
}

// Failed execs one after the other, with blocks allocated and freed before each: every
// exec flushes, and the sender connects again after each. A program thread has ended
// first, so glibc's stack cache holds a stack: ZeroMQ's threads, started again at each
// connection, took it, and glibc freed the program's heap chunks into the sender's heap
// (agent/sender/namespace_threads.cpp). Once the program's heap shrank under them, the program
// died of SIGSEGV, in every run.
TEST_F(ProcessEnd, FailedExecsOneAfterAnotherKeepTheProgramWhole) {
  const std::string db = dir.file("fail-loop.db");
  ProcessResult r = run(db, {kProcessEnd, "exec-fail-loop", std::to_string(kBlocks)});
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << "\nstderr:\n" << r.err;
  const long long pid = pid_of(r);
  ASSERT_NE(pid, 0) << r.out;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(blocks(*q, pid, kAfterSize), kBlocks) << "stderr:\n" << r.err;
  expect_one_whole_session(*q, pid, r.err);
}

// A fork() child that closes every descriptor one at a time with close() before exec (a
// daemon, an older Python's subprocess), ZeroMQ's among them: the first of ZeroMQ's it
// reaches steps the sender out as before an exec (agent/sender/sender_fds.cpp marks them),
// so the child neither dies of ZeroMQ's abort nor loses what it recorded (the slow drain
// leaves the flush the only way out for its blocks), and the image it becomes is recorded.
TEST_F(ProcessEnd, AChildClosingEveryDescriptorOneByOneIsRecordedWhole) {
  const std::string db = dir.file("close-loop.db");
  ProcessResult r = run(db, {kProcessEnd, "fork-close-loop", std::to_string(kBlocks)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  const long long child = child_of(r);
  ASSERT_NE(child, 0) << r.out;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(blocks(*q, child, kAfterSize), kBlocks) << "stderr:\n" << r.err;
  EXPECT_EQ(blocks(*q, child, kImageSize), kBlocks) << "stderr:\n" << r.err;
  const DbRows rows = sessions(*q, child);
  ASSERT_EQ(rows.rows.size(), 2u) << r.err;
  EXPECT_EQ(rows.rows[0][0].text, "exec");
  EXPECT_EQ(rows.rows[1][0].text, "exit code 0");
  for (const auto& row : rows.rows) {
    EXPECT_EQ(row[2].text, "0") << "events dropped";
    EXPECT_EQ(row[3].text, "0") << "messages lost";
  }
}

// A program that puts its own files at descriptor numbers it chooses, with dup2, as a shell's
// `exec 5>log` does, over memtap's: ZeroMQ's descriptors step the sender out as close() does
// (it comes back on new ones), and the memory sampler's stops being read. Each was the
// program's death (ZeroMQ's abort, "Bad file descriptor (src/signaler.cpp:345)") or its file
// read as the resident set (one page, the file's second number).
TEST_F(ProcessEnd, AProgramThatDupsOverMemtapsDescriptorsIsRecordedWhole) {
  const std::string db = dir.file("dup-over.db");
  ProcessResult r = run(db, {kProcessEnd, "dup-over", std::to_string(kBlocks)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  const long long pid = pid_of(r);
  int replaced = 0;
  const size_t at = r.out.find("replaced=");
  ASSERT_NE(at, std::string::npos) << r.out;
  replaced = std::stoi(r.out.substr(at + 9));
  EXPECT_GE(replaced, 2) << "memtap's socket and the sampler's file at least";
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  expect_both_sets_whole(*q, pid, r.err);
  // The last sample, taken in the final flush, after every dup2: the process's resident set.
  const int64_t last_rss = q->scalar_int(
      "SELECT CAST(json_extract(Attr, '$.app_reserved') AS INTEGER) FROM memscope_dump WHERE Event "
      "= "
      "'SNAPSHOT' AND \"Process Id\" = " +
      std::to_string(pid) + " ORDER BY \"Timestamp(ns)\" DESC LIMIT 1");
  EXPECT_GT(last_rss, 1 << 20);
}

// A shell script that opens its own descriptors by number (`exec 3>file`), the most common
// way to meet the case above, runs to its end under memtap, and finds the descriptor numbers
// it finds without memtap: memtap's live above the numbers programs name
// (agent/sender/fd_floor.h), so bash's next free one from 10 up is the same, at the start
// as later.
TEST_F(ProcessEnd, AShellScriptOpeningDescriptorsByNumberRunsToItsEnd) {
  const std::string script =
      "exec {w}</dev/null; echo first=$w; for n in 3 4 5 6 7 8 9; do eval \"exec $n>" +
      dir.file("fd") +
      "$n\"; done; echo written >&9; exec {v}</dev/null; echo next=$v; "
      "x=$(head -c 200000 /dev/zero | tr '\\0' a); echo ${#x}; cat " +
      dir.file("fd9");
  ProcessResult plain = run_process(spec_in(dir, {"/bin/bash", "-c", script}), kProcessTimeout);
  ASSERT_TRUE(plain.exited && plain.exit_code == 0) << describe(plain) << plain.err;
  ASSERT_NE(plain.out.find("\n200000\nwritten\n"), std::string::npos) << plain.out;
  const std::string db = dir.file("shell-fds.db");
  ProcessResult r = run(db, {"/bin/bash", "-c", script});
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out) << r.err;
}

// A child sent SIGTERM right after its fork, while its agent is still starting the child's
// sender (a pool terminating a worker it has just started): the signal waits until that
// sender runs, which then flushes, so each child is in the recording, ended by the signal.
// Taken at once, it found no sender to flush and the child vanished from the recording.
TEST_F(ProcessEnd, AChildTerminatedRightAfterItsForkIsRecorded) {
  const std::string db = dir.file("fork-term.db");
  ProcessResult r = run(db, {kProcessEnd, "fork-term", std::to_string(kBlocks)});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  int children = 0;
  for (const std::string& line : split_lines(r.out)) {
    if (line.rfind("child=", 0) != 0) continue;
    ++children;
    const long long child = std::stoll(line.substr(6));
    const DbRows rows = sessions(*q, child);
    ASSERT_EQ(rows.rows.size(), 1u) << "child " << child << "\n" << r.err;
    EXPECT_EQ(rows.rows[0][0].text, "signal SIGTERM") << child;
    EXPECT_EQ(rows.rows[0][2].text, "0") << "events dropped";
  }
  EXPECT_EQ(children, 4) << r.out;
}

// A fatal signal that comes while another flush runs waits for it by that flush's limit
// (MEMTAP_FLUSH_TIMEOUT_MS), not by its own (MEMTAP_CRASH_FLUSH_MS, set to 1 ms below, so that
// a signal waiting by its own cuts every such flush short): the process was ending or
// exec'ing anyway, and without the signal would have waited as long.
const std::vector<std::string> kSignalWaitsOneMs = {"MEMTAP_CRASH_FLUSH_MS=1"};

// A child that calls _exit while its parent sends it SIGTERM (a pool terminating a worker
// that is leaving anyway), taken on another thread of the child, once the child's flush is
// under way: the signal waits for it, so every block and the Bye reach the recording. Before,
// the signal during _exit's flush ended the child inside it ("no final flush", the last
// events lost): at once, and beside busy cores by its own 2 s deadline too (the flush then
// took longer: the stress runs of the suite). The other order is the next test.
TEST_F(ProcessEnd, ASigtermDuringTheExitFlushLetsItFinish) {
  DbRows rows;
  ASSERT_NO_FATAL_FAILURE(
      expect_child_whole_despite_sigterm("exit-term", &rows, kSignalWaitsOneMs));
  ASSERT_EQ(rows.rows.size(), 1u);
  EXPECT_EQ(rows.rows[0][0].text, "exit code 0");
}

// The other order: the child's second thread takes the SIGTERM and its handler begins the
// final flush, and the child calls _exit meanwhile (once that thread waits in its handler).
// The exit waits for the signal's flush rather than end the process inside it, so every
// block and the Bye, which says the signal, reach the recording.
TEST_F(ProcessEnd, AnExitDuringASigtermsFlushLetsItFinish) {
  DbRows rows;
  ASSERT_NO_FATAL_FAILURE(expect_child_whole_despite_sigterm("term-exit", &rows));
  ASSERT_EQ(rows.rows.size(), 1u);
  EXPECT_EQ(rows.rows[0][0].text, "signal SIGTERM");
}

// The same SIGTERM while the flush before an exec runs: the exec's flush is not cut, so the
// child's blocks are all recorded, whether the signal then ends it or its image runs.
TEST_F(ProcessEnd, ASigtermDuringTheExecFlushLetsItFinish) {
  DbRows rows;
  expect_child_whole_despite_sigterm("exec-term", &rows);
}

// The SIGTERM taken on another thread while the flush before an exec runs: its handler waits
// for that flush, and the exec waits for the signal to end the process, which it does, as
// it would without memtap. (Before, the exec went on and took the handler's thread, and the
// signal, with it: the program ran on as the new image.) Everything the child allocated is
// recorded, and the signal waited by the exec flush's limit, not its own.
TEST_F(ProcessEnd, ASigtermOnAnotherThreadDuringTheExecFlushEndsTheProcess) {
  DbRows rows;
  expect_child_whole_despite_sigterm("exec-term-other", &rows, kSignalWaitsOneMs);
}

void ProcessEnd::expect_child_whole_despite_sigterm(const std::string& mode, DbRows* rows,
                                                    const std::vector<std::string>& env) {
  const std::string db = dir.file(mode + ".db");
  ProcessResult r = run(db, {kProcessEnd, mode, std::to_string(kBlocks)}, env);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  const long long child = child_of(r);
  ASSERT_NE(child, 0) << r.out;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(blocks(*q, child, kAfterSize), kBlocks) << "stderr:\n" << r.err;
  *rows = sessions(*q, child);
  for (const auto& row : rows->rows) EXPECT_EQ(row[2].text, "0") << "events dropped";
}

// SIGKILL: no Bye. The recording, memtap run's summary and the report say "no final flush",
// with how long after its last event memtap run saw it die.
TEST_F(ProcessEnd, SigkillIsSaidToLeaveNoFinalFlush) {
  const std::string db = dir.file("kill.db");
  ProcessResult r = run(db, {kProcessEnd, "kill", std::to_string(kBlocks)});
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  const long long pid = pid_of(r);
  ASSERT_NE(pid, 0) << r.out;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(blocks(*q, pid, kFirstSize), kBlocks) << "stderr:\n" << r.err;
  const DbRows rows = sessions(*q, pid);
  ASSERT_EQ(rows.rows.size(), 1u) << r.err;
  const std::string ended_by = rows.rows[0][0].text;
  EXPECT_TRUE(std::regex_match(ended_by,
                               std::regex("no final flush, [0-9]+\\.[0-9] s after its last event")))
      << ended_by;
  const std::string line = "memtap: pid " + std::to_string(pid) + ": " + ended_by;
  EXPECT_NE(r.err.find(line), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; " + ended_by + "\n"), std::string::npos) << "the live report\n" << r.err;

  ProcessResult report = run_process(spec_in(dir, {kMemtapBin, "report", db}), kProcessTimeout);
  ASSERT_TRUE(report.exited && report.exit_code == 0) << describe(report) << report.err;
  EXPECT_NE(report.out.find("; " + ended_by + "\n"), std::string::npos) << report.out;
  ProcessResult json =
      run_process(spec_in(dir, {kMemtapBin, "report", "--json", db}), kProcessTimeout);
  ASSERT_TRUE(json.exited && json.exit_code == 0) << describe(json) << json.err;
  EXPECT_NE(json.out.find("\"ended_by\":\"" + ended_by + "\""), std::string::npos) << json.out;
}

// Python's subprocess. With preexec_fn it fork()s, and the child (traced, with a sender of
// its own) runs Python code and then tries execve on each directory of PATH in turn: each
// failure goes on recording, and what the child recorded arrives before the exec that
// works. Unless close_fds=False, the child closes every descriptor first (close_range),
// ZeroMQ's included: the sender flushes and steps out before, and comes back after, so the
// child neither crashes (ZeroMQ aborted on its closed descriptors: under load, half the
// runs) nor loses what it recorded. Without preexec_fn subprocess uses vfork(), whose child
// must not touch the parent's sender.
TEST_F(ProcessEnd, PythonSubprocessForkAndVfork) {
  const char* const kinds[] = {"preexec_fn=lambda: None, close_fds=False",
                               "preexec_fn=lambda: None", ""};
  for (const std::string kind : kinds) {
    const std::string db = dir.file("python" + std::to_string(kind.size()) + ".db");
    const std::string script =
        "import subprocess, sys\n"
        "sys.exit(subprocess.run(['true'], " +
        kind + ").returncode)\n";
    ProcessResult r = run(db, {"/usr/bin/python3", "-c", script});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << kind << ": " << describe(r) << "\nstderr:\n"
                                              << r.err;
    std::string error;
    std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
    ASSERT_TRUE(q) << error;
    EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE command_line = 'true' "
                            "AND ended_by = 'exit code 0'"),
              1)
        << kind;
    if (kind.find("preexec_fn") != std::string::npos) {
      EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE forked_from_pid != 0 "
                              "AND ended_by = 'exec' AND messages_lost = 0"),
                1)
          << kind << "\n"
          << r.err;
    }
  }
}

// A child that outlives the program (a daemon it started) is recorded until it ends: memtap
// run says so while it waits, and ends once the child has. (The message is kept for a
// process that still runs: a monitor behind on workers that have exited is finishing.)
TEST_F(ProcessEnd, ADescendantThatOutlivesTheProgramIsRecordedUntilItEnds) {
  const std::string fifo = dir.file("go");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << strerror(errno);
  const std::string db = dir.file("outlive.db");
  // The shell's child waits for a line on the FIFO; the shell says its pid and exits.
  ProcessSpec spec = spec_in(dir, {kMemtapBin, "run", "-o", db, "--", "/bin/sh", "-c",
                                   "(read x < \"$1\"; echo done) & echo \"child=$!\"", "sh", fifo});
  std::string error;
  std::unique_ptr<Process> run = Process::start(spec, &error);
  ASSERT_TRUE(run) << error;
  ASSERT_TRUE(run->wait_for_output(
      [](const std::string&, const std::string& err) {
        return err.find("exited; still recording processes it started") != std::string::npos;
      },
      kProcessTimeout))
      << run->err();
  {
    std::ofstream go(fifo);
    go << "now\n";
  }
  ProcessResult r = run->wait(kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("done\n"), std::string::npos) << r.out;
  const long long child = child_of(r);
  ASSERT_NE(child, 0) << r.out;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  const DbRows rows = sessions(*q, child);
  ASSERT_EQ(rows.rows.size(), 1u) << r.err;
  EXPECT_EQ(rows.rows[0][0].text, "exit code 0") << "the child's own end, after the program's";
}

}  // namespace
}  // namespace memtap::e2e
