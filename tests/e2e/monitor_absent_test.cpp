// "Never break the host": with the agent preloaded and no monitor to talk to (none ever
// started, or one killed with SIGKILL), a program runs to its normal end with its normal
// output and exit code, fork() child and threads included.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"

namespace memtap::e2e {
namespace {

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
// is in the new recording. (What was in flight to the first recorder when it stopped is
// lost to both and not counted yet: that needs acknowledgements on the wire.)
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
  std::unique_ptr<Process> second = start_recorder(dir, endpoint, second_db);
  ASSERT_TRUE(second);
  // The agent reconnects on its own; if it has not yet when the program ends, its exit
  // flush waits up to MEMTAP_CONNECT_TIMEOUT_MS for the connection.
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
}

}  // namespace
}  // namespace memtap::e2e
