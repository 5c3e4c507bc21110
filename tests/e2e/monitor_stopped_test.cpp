// A monitor that stops reading for a while (SIGSTOP: a debugger, a suspended terminal job,
// a machine swapping): by default the program is never held up; the agent keeps what it
// cannot send in its bounded buffers, drops past the bound and counts it. With
// MEMTAP_LOSSLESS=1 the program waits instead and nothing is lost.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <string>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kStreamer = MEMTAP_TEST_STREAMER;
constexpr long kChurn = 1000000;         // 2 M events: 16 MiB of records at 8 bytes
constexpr long kLosslessChurn = 300000;  // 4.8 MiB: past the bound too, and quicker to record

// VmRSS of a process, in KiB (-1 if unreadable).
long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

class MonitorStopped : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  // Starts the recorder and the streamer under the agent (with `env`), and has the streamer
  // allocate one block, answered once it has.
  void start(const std::vector<std::string>& env) {
    recorder = start_recorder(dir, endpoint, db);
    ASSERT_TRUE(recorder);
    ProcessSpec spec = preloaded_spec(dir, {kStreamer}, endpoint);
    spec.pipe_stdin = true;
    spec.env_set.insert(spec.env_set.end(), env.begin(), env.end());
    std::string error;
    program = Process::start(spec, &error);
    ASSERT_TRUE(program) << error;
    ask("alloc 1 100\n", "ok 100\n");
  }

  // Sends a command and waits until standard output is `out_after`.
  void ask(const std::string& command, const std::string& out_after) {
    ASSERT_TRUE(program->write_stdin(command));
    ASSERT_TRUE(program->wait_for_output(
        [&](const std::string& out, const std::string&) { return out == out_after; },
        kProcessTimeout))
        << "stdout:\n"
        << program->out() << "\nstderr:\n"
        << program->err();
  }

  // Ends the program (exit code 0), then the recorder; the recording.
  std::unique_ptr<DbQuery> finish() {
    program->close_stdin();
    ProcessResult r = program->wait(kProcessTimeout);
    EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
    return stop_recorder_and_open(*recorder, db);
  }

  // The churn's blocks (64 bytes; the first block is 100).
  static int64_t churned_blocks(const DbQuery& q) { return mallocs_of_size(q, 64); }

  // Stops the monitor once it has heard of the program (its first block is in the file the
  // recorder is writing: the writer commits at least every second): what the program says
  // later can then only be this connection's.
  void stop_monitor_once_it_knows_the_program() {
    ASSERT_TRUE(poll_until(
        [&] {
          std::string error;
          std::unique_ptr<DbQuery> partial = DbQuery::open(db + ".partial", &error);
          return partial && mallocs_of_size(*partial, 100) > 0;
        },
        kProcessTimeout));
    ASSERT_TRUE(recorder->signal(SIGSTOP));
  }

  // Waits until the program says its flush gave events up, then lets the monitor read again.
  void expect_the_flush_to_give_up() {
    const bool gave_up = program->wait_for_output(
        [](const std::string&, const std::string& err) {
          return err.find("counted as dropped") != std::string::npos;
        },
        kProcessTimeout);
    ASSERT_TRUE(recorder->signal(SIGCONT));
    ASSERT_TRUE(gave_up) << "stderr:\n" << program->err();
  }

  TempDir dir;
  std::string endpoint = "ipc://" + dir.file("m.sock");
  std::string db = dir.file("stopped.db");
  std::unique_ptr<Process> recorder;
  std::unique_ptr<Process> program;
};

// The program answers while the monitor is stopped: it was not held up. What did not fit
// the agent's bound (1 MiB here) is dropped and counted, and the agent's memory stays
// near it.
TEST_F(MonitorStopped, TheProgramGoesOnAndWhatDoesNotFitIsCounted) {
  start({"MEMTAP_BUFFER_MB=1"});
  ASSERT_TRUE(recorder->signal(SIGSTOP));
  const long before = rss_kib(program->pid());
  ask("churn " + std::to_string(kChurn) + " 64\n", "ok 100\nok 100\n");
  const long after = rss_kib(program->pid());
  ASSERT_TRUE(recorder->signal(SIGCONT));
  EXPECT_LT(after - before, 8 * 1024) << "KiB grown while the monitor was stopped";
  std::unique_ptr<DbQuery> q = finish();
  ASSERT_TRUE(q);
  const int64_t dropped = q->scalar_int("SELECT events_dropped FROM memtap_session");
  const int64_t blocks = churned_blocks(*q);
  EXPECT_GT(dropped, 0) << "16 MiB of records cannot fit 1 MiB";
  EXPECT_LE(blocks, kChurn);
  EXPECT_GE(blocks + dropped, kChurn) << blocks << " blocks, " << dropped << " dropped";
  EXPECT_LE(q->scalar_int("SELECT unmatched_frees FROM memtap_session"), dropped);
}

// The program exits while the monitor is stopped: the final flush cannot send, and gives
// up before its time (MEMTAP_FLUSH_TIMEOUT_MS) is over, keeping a part of it for the Bye.
// The program says so on stderr, and once the monitor reads again the Bye counts every
// event left behind: the recording says how many went, and that the program exited.
// (Before, the buffered events went silently: "0 dropped", and "no final flush".)
TEST_F(MonitorStopped, AnExitItCannotWaitForCountsWhatItLeft) {
  start({"MEMTAP_FLUSH_TIMEOUT_MS=4000"});
  ASSERT_NO_FATAL_FAILURE(stop_monitor_once_it_knows_the_program());
  ask("churn " + std::to_string(kChurn) + " 64\n", "ok 100\nok 100\n");
  program->close_stdin();
  ASSERT_NO_FATAL_FAILURE(expect_the_flush_to_give_up());
  EXPECT_NE(program->err().find("MEMTAP_FLUSH_TIMEOUT_MS=4000"), std::string::npos)
      << program->err();
  std::unique_ptr<DbQuery> q = finish();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->scalar_int("SELECT bye_received FROM memtap_session"), 1);
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE ended_by = 'exit code 0'"), 1)
      << memtap_session_text(*q);
  const int64_t dropped = q->scalar_int("SELECT events_dropped FROM memtap_session");
  const int64_t blocks = churned_blocks(*q);
  EXPECT_GT(dropped, 0);
  EXPECT_GE(blocks + dropped, kChurn) << blocks << " blocks, " << dropped << " dropped";
  EXPECT_EQ(q->scalar_int("SELECT events_lost FROM memtap_session"), 0)
      << "what the agent handed over, the monitor received";
}

// The same as an exec: the flush before it cannot send either, and gives up what is left,
// counted. The old image cannot say so (exec leaves no room for a Bye): the new image's
// Hello does. (Before, the old image's session said "0 dropped", its unsent events gone
// without a trace.)
TEST_F(MonitorStopped, AnExecItCannotWaitForCountsWhatItLeft) {
  start({"MEMTAP_FLUSH_TIMEOUT_MS=4000"});
  ASSERT_NO_FATAL_FAILURE(stop_monitor_once_it_knows_the_program());
  ask("churn " + std::to_string(kChurn) + " 64\n", "ok 100\nok 100\n");
  ASSERT_TRUE(program->write_stdin("exec\n"));
  ASSERT_NO_FATAL_FAILURE(expect_the_flush_to_give_up());
  // The new image reads the next command (the old one read nothing after "exec").
  ask("alloc 1 200\n", "ok 100\nok 100\nok 200\n");
  std::unique_ptr<DbQuery> q = finish();
  ASSERT_TRUE(q);
  ASSERT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session"), 2) << memtap_session_text(*q);
  const std::string old_image = " FROM memtap_session WHERE ended_by = 'exec'";
  ASSERT_EQ(q->scalar_int("SELECT COUNT(*)" + old_image), 1) << memtap_session_text(*q);
  const int64_t dropped = q->scalar_int("SELECT events_dropped" + old_image);
  const int64_t blocks = churned_blocks(*q);
  EXPECT_GT(dropped, 0) << memtap_session_text(*q);
  EXPECT_GE(blocks + dropped, kChurn) << blocks << " blocks, " << dropped << " dropped";
  EXPECT_EQ(q->scalar_int("SELECT events_sent - events_received" + old_image), 0)
      << "what the old image handed over, the monitor received\n"
      << memtap_session_text(*q);
  EXPECT_EQ(q->scalar_int("SELECT events_lost" + old_image), 0);
  EXPECT_EQ(q->scalar_int("SELECT late_events" + old_image), 0)
      << "the old image ran until its last batch had come, whichever connection was read first";
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE ended_by = 'exit code 0' "
                          "AND events_dropped = 0"),
            1)
      << memtap_session_text(*q);
  EXPECT_EQ(mallocs_of_size(*q, 200), 1) << "the new image's block";
}

// Lossless: the program waits for the monitor rather than drop; once it goes on, every
// event is there.
TEST_F(MonitorStopped, LosslessWaitsAndLosesNothing) {
  start({"MEMTAP_BUFFER_MB=1", "MEMTAP_LOSSLESS=1"});
  ASSERT_TRUE(recorder->signal(SIGSTOP));
  ASSERT_TRUE(program->write_stdin("churn " + std::to_string(kLosslessChurn) + " 64\n"));
  ASSERT_TRUE(recorder->signal(SIGCONT));
  ask("", "ok 100\nok 100\n");
  std::unique_ptr<DbQuery> q = finish();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->scalar_int("SELECT events_dropped FROM memtap_session"), 0);
  EXPECT_EQ(churned_blocks(*q), kLosslessChurn);
  EXPECT_EQ(q->scalar_int("SELECT unmatched_frees FROM memtap_session"), 0);
}

}  // namespace
}  // namespace memtap::e2e
