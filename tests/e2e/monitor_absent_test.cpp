// "Never break the host": with the agent preloaded and no monitor to talk to (none ever
// started, or one killed with SIGKILL), a program runs to its normal end with its normal
// output and exit code, fork() child and threads included. And a monitor restarted while
// the program runs: the next recording goes on, and says how many events went before it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <zmq.hpp>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"
#include "tests/e2e/wire_forgery.h"

namespace memtap::e2e {
namespace {

const std::string kStreamer = MEMTAP_TEST_STREAMER;

// A recorder that prints its progress (MEMTAP_PROGRESS_MS) has recorded events: a process's
// Hello and a batch after it came. (The agent's first batch after a Hello carries a memory
// sample, so an idle process sends one too.)
bool has_received(const std::string& recorder_err) {
  const std::string key = " received=";
  for (size_t at = recorder_err.find(key); at != std::string::npos;
       at = recorder_err.find(key, at + 1)) {
    const size_t digit = at + key.size();
    if (digit < recorder_err.size() && recorder_err[digit] >= '1' && recorder_err[digit] <= '9') {
      return true;
    }
  }
  return false;
}

// One process's counts of what was sent and what came, from a recording's memtap_session.
struct SentCounts {
  int64_t received = -1, sent = -1, sent_before = -1, lost = -1, dropped = -1, bye = -1;
};

// The instance id (hex text) memtap_session has for `pid`; "" if none.
std::string instance_of(const DbQuery& q, const std::string& pid) {
  DbRows rows;
  std::string error;
  if (!q.query("SELECT instance_id FROM memtap_session WHERE pid = ?1", {pid}, &rows, &error) ||
      rows.rows.empty()) {
    return "";
  }
  return rows.rows[0][0].text;
}

SentCounts sent_counts(const DbQuery& q, const std::string& where) {
  auto column = [&](const std::string& name) {
    return q.scalar_int("SELECT " + name + " FROM memtap_session WHERE " + where);
  };
  SentCounts c;
  c.received = column("events_received");
  c.sent = column("events_sent");
  c.sent_before = column("events_sent_before");
  c.lost = column("events_lost");
  c.dropped = column("events_dropped");
  c.bye = column("bye_received");
  return c;
}

class MonitorAbsent : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  // The program with and without the agent: the same exit code and standard output.
  void expect_unchanged(const std::vector<std::string>& argv, const std::string& endpoint) {
    ProcessResult plain = run_process(spec_in(dir, argv), kProcessTimeout);
    ProcessResult traced = run_process(preloaded_spec(dir, argv, endpoint), kProcessTimeout);
    ASSERT_TRUE(plain.exited) << describe(plain);
    ASSERT_TRUE(traced.exited) << describe(traced) << "\nstderr:\n" << traced.err;
    EXPECT_EQ(traced.exit_code, plain.exit_code) << "stderr:\n" << traced.err;
    EXPECT_EQ(traced.out, plain.out);
  }

  // alloc_pattern under the agent: its exit code, and its documented output (its pids and
  // tids differ from run to run). The exit code also says the fork() child succeeded.
  void expect_pattern_completes(const std::string& endpoint) {
    ProcessResult r =
        run_process(preloaded_spec(dir, {kAllocPattern, "7"}, endpoint), kProcessTimeout);
    ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
    EXPECT_EQ(r.exit_code, 7) << "stderr:\n" << r.err;
    PatternRun run;
    std::string error;
    EXPECT_TRUE(parse_pattern_output(r.out, &run, &error)) << error;
  }

  TempDir dir;
};

TEST_F(MonitorAbsent, SocketThatDoesNotExist) {
  const std::string endpoint = "ipc://" + dir.file("nobody/here.sock");
  expect_unchanged({kExitCode, "4", "two words", ""}, endpoint);
  expect_unchanged({kForeignZmq}, endpoint);
  expect_pattern_completes(endpoint);
}

TEST_F(MonitorAbsent, MonitorKilledBeforeTheProgramStarts) {
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  std::unique_ptr<Process> recorder = start_recorder(dir, endpoint, dir.file("killed.db"));
  ASSERT_TRUE(recorder);
  ASSERT_TRUE(recorder->signal(SIGKILL));
  ProcessResult killed = recorder->wait(kProcessTimeout);
  ASSERT_EQ(killed.term_signal, SIGKILL) << describe(killed);
  // Its socket file stays behind, with nobody listening: connections are refused.
  expect_unchanged({kExitCode, "4", "two words", ""}, endpoint);
  expect_pattern_completes(endpoint);
}

// The monitor dies while the program is running and has streamed events to it. Python
// is used because it can wait for the test between two phases (a line on stdin).
TEST_F(MonitorAbsent, MonitorKilledWhileTheProgramRuns) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  std::unique_ptr<Process> recorder = start_recorder(dir, endpoint, dir.file("killed.db"));
  ASSERT_TRUE(recorder);

  const char* script = R"(
import os, sys, threading
blocks = [bytearray(100003) for _ in range(50)]
print("ready", flush=True)
sys.stdin.readline()
def work():
    global blocks
    blocks = [bytearray(70001) for _ in range(200)]
t = threading.Thread(target=work); t.start(); t.join()
pid = os.fork()
if pid == 0:
    more = [bytearray(50021) for _ in range(100)]
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("done", os.waitstatus_to_exitcode(status), flush=True)
sys.exit(3)
)";
  ProcessSpec spec = preloaded_spec(dir, {"/usr/bin/python3", "-c", script}, endpoint);
  spec.pipe_stdin = true;
  std::string error;
  std::unique_ptr<Process> program = Process::start(spec, &error);
  ASSERT_TRUE(program) << error;
  ASSERT_TRUE(program->wait_for_output(
      [](const std::string& out, const std::string&) { return out == "ready\n"; }, kProcessTimeout))
      << "stdout:\n"
      << program->out() << "\nstderr:\n"
      << program->err();

  ASSERT_TRUE(recorder->signal(SIGKILL));
  ProcessResult killed = recorder->wait(kProcessTimeout);
  ASSERT_EQ(killed.term_signal, SIGKILL) << describe(killed);

  ASSERT_TRUE(program->write_stdin("go\n"));
  program->close_stdin();
  ProcessResult r = program->wait(kProcessTimeout);
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 3) << "stderr:\n" << r.err;
  EXPECT_EQ(r.out, "ready\ndone 0\n");
}

// A monitor restarted on the same endpoint while the program runs: the agent notices the
// new connection, says Hello again, and what it records from then on, its exit included,
// is in the new recording. Its Hello says how many events went to the first recorder, so
// that the new recording counts none of them lost: the first recorder has what it
// recorded of them, and whatever was in flight to it when it stopped is the difference
// (EventsInFlightWhenTheMonitorStoppedAreCountedByTheNextRecording makes sure of some).
TEST_F(MonitorAbsent, MonitorRestartedWhileTheProgramRuns) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string first_db = dir.file("first.db");
  const std::string second_db = dir.file("second.db");
  std::unique_ptr<Process> first = start_recorder(dir, endpoint, first_db);
  ASSERT_TRUE(first);
  const char* script = R"(
import os, sys
before = [bytearray(100003) for _ in range(5)]
print(os.getpid(), flush=True)
sys.stdin.readline()
after = [bytearray(70001) for _ in range(7)]
del after
print("done", flush=True)
)";
  ProcessSpec spec = preloaded_spec(dir, {"/usr/bin/python3", "-c", script}, endpoint);
  spec.pipe_stdin = true;
  std::string error;
  std::unique_ptr<Process> program = Process::start(spec, &error);
  ASSERT_TRUE(program) << error;
  ASSERT_TRUE(program->wait_for_output(
      [](const std::string& out, const std::string&) { return out.find('\n') != out.npos; },
      kProcessTimeout))
      << program->err();
  const long long pid = std::stoll(program->out());

  ProcessResult stopped = stop_recorder(*first);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;
  std::unique_ptr<Process> second =
      start_recorder(dir, endpoint, second_db, {"MEMTAP_PROGRESS_MS=20"});
  ASSERT_TRUE(second);
  // The agent reconnects on its own, in ZeroMQ's time (a try every 100-200 ms, on threads
  // that run behind the program). Had the program ended first, its exit flush would have
  // waited for the connection up to MEMTAP_CONNECT_TIMEOUT_MS (1 s), which a loaded machine
  // can outlast: the test waits for the new recorder to have the process.
  ASSERT_TRUE(second->wait_for_output(
      [](const std::string&, const std::string& err) { return has_received(err); },
      kProcessTimeout))
      << second->err();
  ASSERT_TRUE(program->write_stdin("go\n"));
  program->close_stdin();
  ProcessResult r = program->wait(kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  ProcessResult second_stopped = stop_recorder(*second);
  ASSERT_TRUE(second_stopped.exited && second_stopped.exit_code == 0)
      << describe(second_stopped) << second_stopped.err;

  std::unique_ptr<DbQuery> q = DbQuery::open(second_db, &error);
  ASSERT_TRUE(q) << error;
  const std::string p = std::to_string(pid);
  EXPECT_EQ(q->scalar_int("SELECT bye_received FROM memtap_session WHERE pid = " + p), 1)
      << "the program's exit flush reached the new recorder";
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Process Id\" = " + p +
                          " AND Event = 'MALLOC' AND Attr LIKE '%\"size\":\"70002\"%'"),
            7)
      << "the allocations made after the restart";

  // What the agent sent is what the two recordings got plus what was lost on the way.
  const SentCounts c = sent_counts(*q, "pid = " + p);
  EXPECT_EQ(c.sent_before + c.received + c.lost, c.sent)
      << c.sent_before << " sent before, " << c.received << " received, " << c.lost << " lost";
  EXPECT_EQ(c.lost, 0) << "nothing is lost over the new recorder's own connection";
  std::unique_ptr<DbQuery> q1 = DbQuery::open(first_db, &error);
  ASSERT_TRUE(q1) << error;
  const std::string instance = "'" + instance_of(*q, p) + "'";
  const SentCounts c1 = sent_counts(*q1, "instance_id = " + instance);
  EXPECT_GT(c1.received, 0) << "the first recorder had the start";
  EXPECT_EQ(c1.bye, 0);
  EXPECT_GE(c.sent_before, c1.received)
      << "the first recorder's share, recorded there or in flight when it stopped";
  EXPECT_NE(second_stopped.err.find(count_said(c.sent_before) +
                                    " sent to an earlier monitor before this recording"),
            std::string::npos)
      << second_stopped.err;
}

// Events the agent had handed to a monitor that stopped before it recorded them are lost on
// the way, and the next recording says how many went before it, so that they are counted:
// what went before it = what the first monitor recorded + what was lost on the way to it.
// The first monitor is played by the test, a PULL socket that counts the events it takes
// (as a recorder records them) and stops while the program churns, with messages waiting
// that it has taken off the socket but not recorded, and more on their way: the loss is
// there for certain. MEMTAP_LOSSLESS=1 keeps the agent from dropping while nobody reads (a
// batch ZeroMQ had not taken when the connection went is still given up, and counted as
// dropped), so every churned block is taken by the first monitor, lost on the way,
// dropped, or in the second recording.
TEST_F(MonitorAbsent, EventsInFlightWhenTheMonitorStoppedAreCountedByTheNextRecording) {
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string db = dir.file("second.db");
  constexpr int64_t kChurn = 300000;  // 600 k events: ten batches at the least
  constexpr uint64_t kSize = 777;     // no other block of the streamer has this size
  auto ctx = std::make_unique<zmq::context_t>();
  auto first = std::make_unique<zmq::socket_t>(*ctx, zmq::socket_type::pull);
  first->set(zmq::sockopt::linger, 0);
  first->bind(endpoint);

  ProcessSpec spec = preloaded_spec(dir, {kStreamer}, endpoint);
  spec.pipe_stdin = true;
  spec.env_set.push_back("MEMTAP_BUFFER_MB=1");
  spec.env_set.push_back("MEMTAP_LOSSLESS=1");
  std::string error;
  std::unique_ptr<Process> program = Process::start(spec, &error);
  ASSERT_TRUE(program) << error;
  ASSERT_TRUE(
      program->write_stdin("churn " + std::to_string(kChurn) + " " + std::to_string(kSize) + "\n"));

  const auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
  auto take = [&](ReadHeader* h) {
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{first->handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
      zmq::message_t message;
      if (!first->recv(message, zmq::recv_flags::dontwait)) continue;
      *h = read_header(message.data(), message.size());
      return h->ok;
    }
    return false;
  };
  // Recorded by the first monitor: everything up to the churn's first events.
  uint32_t pid = 0;
  int64_t recorded = 0, recorded_churn = 0;
  while (recorded_churn == 0) {
    ReadHeader h;
    ASSERT_TRUE(take(&h)) << "the agent's messages stopped coming\n" << program->err();
    if (h.body == 'h') {
      pid = h.pid;
      EXPECT_EQ(h.events_sent_before, 0u) << "the agent's first connection";
    }
    recorded += int64_t(h.events);
    recorded_churn += int64_t(h.malloc_sizes[kSize]);
  }
  // It stops. What it had taken but not recorded is lost, and the churn cannot have ended
  // without more batches (a batch holds at most 65536 events): at least one comes.
  int64_t lost_here = 0;
  while (lost_here == 0) {
    ReadHeader h;
    ASSERT_TRUE(take(&h)) << "the agent's messages stopped coming\n" << program->err();
    lost_here += int64_t(h.events);
  }
  // Closed with the context, so that its socket file is gone before the next monitor binds.
  first.reset();
  ctx.reset();

  std::unique_ptr<Process> second = start_recorder(dir, endpoint, db, {"MEMTAP_PROGRESS_MS=20"});
  ASSERT_TRUE(second);
  ASSERT_TRUE(program->wait_for_output(
      [](const std::string& out, const std::string&) { return out == "ok 0\n"; }, kProcessTimeout))
      << "stdout:\n"
      << program->out() << "\nstderr:\n"
      << program->err();
  // As in MonitorRestartedWhileTheProgramRuns: the agent reconnects in ZeroMQ's time, and an
  // exit before that waits for it at most MEMTAP_CONNECT_TIMEOUT_MS (1 s), which a loaded
  // machine outlasted (the second recording then had no trace of the process).
  ASSERT_TRUE(second->wait_for_output(
      [](const std::string&, const std::string& err) { return has_received(err); },
      kProcessTimeout))
      << second->err();
  program->close_stdin();
  ProcessResult r = program->wait(kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  ProcessResult stopped = stop_recorder(*second);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;

  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  const std::string p = std::to_string(pid);
  const SentCounts c = sent_counts(*q, "pid = " + p);
  ASSERT_EQ(c.bye, 1) << "the program's exit flush reached the second recorder";
  EXPECT_EQ(c.sent_before + c.received + c.lost, c.sent)
      << c.sent_before << " sent before, " << c.received << " received, " << c.lost << " lost";
  EXPECT_EQ(c.lost, 0) << "nothing is lost over the second recorder's own connection";
  // The first monitor's share: what it recorded and what it lost.
  const int64_t lost_on_the_way = c.sent_before - recorded;
  EXPECT_GE(lost_on_the_way, lost_here)
      << c.sent_before << " sent before, " << recorded << " recorded by the first monitor";
  // Every churned block is somewhere, or counted as lost or dropped.
  const int64_t second_churn =
      q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Process Id\" = " + p +
                    " AND Event = 'MALLOC' AND CAST(json_extract(Attr, '$.size') AS INTEGER) = " +
                    std::to_string(kSize));
  const int64_t missing = kChurn - recorded_churn - second_churn;
  EXPECT_GT(missing, 0) << "churned blocks lost on the way";
  EXPECT_LE(missing, lost_on_the_way + c.dropped)
      << recorded_churn << " recorded by the first monitor, " << second_churn << " by the second; "
      << lost_on_the_way << " lost on the way, " << c.dropped << " dropped";

  ProcessResult report = run_process(spec_in(dir, {kMemtapBin, "report", db}), kProcessTimeout);
  ASSERT_TRUE(report.exited && report.exit_code == 0) << describe(report) << report.err;
  EXPECT_NE(report.out.find(count_said(c.sent_before) +
                            " sent to an earlier monitor before this recording"),
            std::string::npos)
      << report.out;
}

}  // namespace
}  // namespace memtap::e2e
