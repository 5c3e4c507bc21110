// A sender thread that gets no CPU. It runs behind the program (nice 19), so beside other
// busy processes it gets about 1.5 % of a core, and a PyTorch rank's sender fell more than
// 10 s behind. The agent's catch-up thread, at the program's priority, then takes the rounds
// over. Here the sender thread is frozen outright (ptrace stops that one thread, as a machine
// that never schedules it would): events the program makes meanwhile must still reach the
// recording while the program runs, and none may be lost or late; and a fatal signal's
// final flush must not wait for it.
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kStreamer = MEMTAP_TEST_STREAMER;
constexpr long kChurn = 200000;  // 400 K events, made while the sender thread is frozen

// The id of the thread of `pid` named `name`, or 0.
pid_t thread_named(pid_t pid, const std::string& name) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (!dir) return 0;
  pid_t found = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(tasks + "/" + e->d_name + "/comm");
    std::string line;
    if (std::getline(comm, line) && line == name) found = pid_t(std::stol(e->d_name));
  }
  closedir(dir);
  return found;
}

// One thread of a child process, stopped with ptrace (the rest of the process runs on) at its
// wait between rounds: a futex wait with a timeout on a word that holds 0, which no lock of
// the sender's is (a thread stopped while it held one would stop the catch-up thread too,
// as no real scheduler does for long). Resumed when this goes.
class FrozenThread {
 public:
  FrozenThread(pid_t pid, pid_t tid) : pid_(pid), tid_(tid) {}
  ~FrozenThread() { thaw(); }

  // An empty text once the thread is stopped at its wait; else what went wrong. The thread
  // is watched running until it shows the wait, then stopped: at nice 19 beside busy cores a
  // round takes it seconds, and stopping it on every try (as this once did, 1000 times in a
  // row) kept it from ever finishing one.
  std::string freeze() {
    if (ptrace(PTRACE_SEIZE, tid_, nullptr, nullptr) != 0) {
      refused_ = errno == EPERM || errno == EACCES;  // Yama, seccomp, a container's policy
      return std::string("PTRACE_SEIZE: ") + strerror(errno);
    }
    seized_ = true;
    std::string last;
    const auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !poll_until(
                                   [&] {
                                     last = syscall_line();
                                     return at_interval_wait(last);
                                   },
                                   left)) {
        return "never stopped at its wait between rounds; last: " + last;
      }
      if (std::string error = stop(); !error.empty()) return error;
      last = syscall_line();
      if (at_interval_wait(last)) return {};
      // Its wait ended before the stop came: on again, and watched again.
      if (ptrace(PTRACE_CONT, tid_, nullptr, nullptr) != 0) {
        return std::string("PTRACE_CONT: ") + strerror(errno);
      }
      stopped_ = false;
    }
  }

  bool refused() const { return refused_; }

  // After the process has died with the thread still stopped: the thread's end, which the
  // tracer has to collect before the process's own can be.
  void reap_after_death() {
    if (!seized_) return;
    int status = 0;
    waitpid(tid_, &status, __WALL);
    seized_ = false;
    stopped_ = false;
  }

  // A running tracee cannot be detached: stopped first. Left traced, the thread's end would
  // wait for this process to collect it, and so would the program's (a test that failed to
  // freeze it then hung until ctest's timeout).
  void thaw() {
    if (!seized_) return;
    if (stopped_ || stop().empty()) ptrace(PTRACE_DETACH, tid_, nullptr, nullptr);
    seized_ = false;
    stopped_ = false;
  }

 private:
  std::string stop() {
    if (ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr) != 0) {
      return std::string("PTRACE_INTERRUPT: ") + strerror(errno);
    }
    int status = 0;
    if (waitpid(tid_, &status, __WALL) != tid_) return std::string("waitpid: ") + strerror(errno);
    // A thread that exited (its process killed) is collected by that wait, and gone.
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      seized_ = false;
      return "the thread ended";
    }
    stopped_ = true;
    return {};
  }

  // "running" while the thread runs; the system call it waits in otherwise.
  std::string syscall_line() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid_) +
                     "/syscall");
    std::string line;
    std::getline(in, line);
    return line;
  }

  // "nr uaddr op val timeout ...": futex(word, FUTEX_WAIT_PRIVATE, 0, &timeout).
  static bool at_interval_wait(const std::string& line) {
    std::istringstream fields(line);
    long nr = -1;
    std::string uaddr, op, val, timeout;
    fields >> nr >> uaddr >> op >> val >> timeout;
    return nr == SYS_futex &&
           std::stoul(op.empty() ? "0" : op, nullptr, 16) == FUTEX_WAIT_PRIVATE && val == "0x0" &&
           !timeout.empty() && timeout != "0x0";
  }

  pid_t pid_, tid_;
  bool seized_ = false;
  bool stopped_ = false;
  bool refused_ = false;
};

// A streaming program whose sender thread is frozen, beside a recorder, with its first
// block in the recording. `skip` where this machine does not let a parent trace its child.
struct StarvedSender {
  TempDir dir;
  std::string db = dir.file("starved.db");
  std::unique_ptr<Process> recorder;
  std::unique_ptr<Process> program;
  std::unique_ptr<FrozenThread> frozen;
  bool skip = false;
  std::string skip_reason;

  void start() {
    ASSERT_TRUE(dir.ok());
    const std::string endpoint = "ipc://" + dir.file("m.sock");
    recorder = start_recorder(dir, endpoint, db);
    ASSERT_TRUE(recorder);
    ProcessSpec spec = preloaded_spec(dir, {kStreamer}, endpoint);
    spec.pipe_stdin = true;
    std::string error;
    program = Process::start(spec, &error);
    ASSERT_TRUE(program) << error;
    ASSERT_TRUE(ask("alloc 1 100\n", "ok 100\n")) << program->err();
    // The sender thread has stepped back (its Hello is out), and its rounds reach the file.
    ASSERT_TRUE(poll_until([&] { return in_partial(100, 1); }, kProcessTimeout));
    const pid_t sender = thread_named(program->pid(), "memtap-sender");
    ASSERT_NE(sender, 0);
    ASSERT_NE(thread_named(program->pid(), "memtap-catchup"), 0);
    frozen = std::make_unique<FrozenThread>(program->pid(), sender);
    const std::string freeze_error = frozen->freeze();
    if (frozen->refused()) {
      skip = true;
      skip_reason = "this machine does not let a parent trace its child (" + freeze_error +
                    "): the sender thread cannot be stopped alone";
      return;
    }
    ASSERT_EQ(freeze_error, "") << "cannot stop the sender thread alone";
  }

  bool ask(const std::string& command, const std::string& out_after) {
    return program->write_stdin(command) &&
           program->wait_for_output(
               [&](const std::string& out, const std::string&) { return out == out_after; },
               kProcessTimeout);
  }

  // Ends the program (its input closed; it must exit 0) and the recorder: the recording.
  std::unique_ptr<DbQuery> end_program_and_recorder() {
    program->close_stdin();
    ProcessResult r = program->wait(kProcessTimeout);
    EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
    return stop_recorder_and_open(*recorder, db);
  }

  bool in_partial(int size, int64_t count) {
    std::string open_error;
    std::unique_ptr<DbQuery> partial = DbQuery::open(db + ".partial", &open_error);
    return partial && mallocs_of_size(*partial, size) >= count;
  }
};

std::string ended_by(const DbQuery& q) {
  DbRows rows;
  std::string error;
  if (!q.query("SELECT ended_by FROM memtap_session", {}, &rows, &error) || rows.rows.size() != 1) {
    return "(no single session row)";
  }
  return rows.rows[0][0].text;
}

TEST(SenderStarved, TheCatchUpThreadSendsWhatTheProgramMakesMeanwhile) {
  StarvedSender t;
  ASSERT_NO_FATAL_FAILURE(t.start());
  if (t.skip) GTEST_SKIP() << t.skip_reason;
  ASSERT_TRUE(t.ask("churn " + std::to_string(kChurn) + " 64\n", "ok 100\nok 100\n"))
      << t.program->err();
  const bool arrived = poll_until([&] { return t.in_partial(64, kChurn); }, kProcessTimeout);
  t.frozen->thaw();
  EXPECT_TRUE(arrived) << "the churn did not reach the recording while the sender was frozen";

  std::unique_ptr<DbQuery> q = t.end_program_and_recorder();
  ASSERT_TRUE(q);
  EXPECT_EQ(mallocs_of_size(*q, 64), kChurn);
  EXPECT_EQ(q->scalar_int("SELECT bye_received FROM memtap_session"), 1) << memtap_session_text(*q);
  EXPECT_EQ(q->scalar_int("SELECT events_dropped + events_lost + late_events + unmatched_frees "
                          "FROM memtap_session"),
            0)
      << memtap_session_text(*q);
}

// A fatal signal while the sender thread gets no CPU: the final flush it asks for is the
// catch-up thread's, at the program's priority. Done by the sender thread, as before, a
// SIGTERM beside busy cores had the crumbs of a core that nice 19 gets within the deadline,
// and what it had not sent by then was given up; frozen here, it did nothing at all, and the
// process died without its Bye ("no final flush").
TEST(SenderStarved, ASigtermIsFlushedByTheCatchUpThread) {
  StarvedSender t;
  ASSERT_NO_FATAL_FAILURE(t.start());
  if (t.skip) GTEST_SKIP() << t.skip_reason;
  ASSERT_TRUE(t.ask("churn " + std::to_string(kChurn) + " 64\n", "ok 100\nok 100\n"))
      << t.program->err();
  ASSERT_EQ(kill(t.program->pid(), SIGTERM), 0);
  t.frozen->reap_after_death();
  ProcessResult r = t.program->wait(kProcessTimeout);
  EXPECT_EQ(r.term_signal, SIGTERM) << describe(r) << r.err;
  std::unique_ptr<DbQuery> q = stop_recorder_and_open(*t.recorder, t.db);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->scalar_int("SELECT bye_received FROM memtap_session"), 1) << memtap_session_text(*q);
  EXPECT_EQ(ended_by(*q), "signal SIGTERM");
  EXPECT_EQ(mallocs_of_size(*q, 64), kChurn);
  EXPECT_EQ(q->scalar_int("SELECT events_dropped + events_lost + late_events + unmatched_frees "
                          "FROM memtap_session"),
            0)
      << memtap_session_text(*q);
}

// App Reserved while the sender thread gets no CPU: the catch-up thread reads the resident
// set on time when the rounds leave it undone. Read in the rounds alone, samples came only with
// the catch-up thread's rounds, a second or more apart: App Reserved stayed flat while the
// program grew, then jumped (a PyTorch run beside a live window on two cores: gaps of 1.3 s,
// and the curve below the heap it holds).
TEST(SenderStarved, TheResidentSetIsStillSampledOnTime) {
  StarvedSender t;
  ASSERT_NO_FATAL_FAILURE(t.start());
  if (t.skip) GTEST_SKIP() << t.skip_reason;
  constexpr int64_t kMiB = 1 << 20;
  ASSERT_TRUE(t.ask("alloc 64 1048576\n", "ok 100\nok " + std::to_string(100 + 64 * kMiB) + "\n"))
      << t.program->err();
  const std::string pid = std::to_string(t.program->pid());
  const std::string snapshots =
      "FROM memscope_dump WHERE Event = 'SNAPSHOT' AND \"Process Id\" = " + pid;
  const std::string allocs =
      "FROM memscope_dump WHERE Event = 'MALLOC' AND "
      "CAST(json_extract(Attr, '$.size') AS INTEGER) = 1048576";
  // The mallocs come with the catch-up thread's first round, a second after the last
  // round; then waited for: samples dated 500 ms after the last of them.
  int64_t alloc_end = -1;
  const bool sampled_after = poll_until(
      [&] {
        std::string error;
        std::unique_ptr<DbQuery> partial = DbQuery::open(t.db + ".partial", &error);
        if (!partial || mallocs_of_size(*partial, kMiB) < 64) return false;
        alloc_end = partial->scalar_int("SELECT MAX(\"Timestamp(ns)\") " + allocs);
        return partial->scalar_int("SELECT COUNT(*) " + snapshots + " AND \"Timestamp(ns)\" >= " +
                                   std::to_string(alloc_end + 500'000'000)) > 0;
      },
      kProcessTimeout);
  t.frozen->thaw();
  ASSERT_TRUE(sampled_after) << "no memory sample 500 ms after the program's allocations";

  std::unique_ptr<DbQuery> q = t.end_program_and_recorder();
  ASSERT_TRUE(q);
  const std::string end = std::to_string(alloc_end);
  // Every 10 ms (MEMTAP_RSS_INTERVAL_MS): 50 in those 500 ms, less the catch-up thread's first look
  // (100 ms at most, if the freeze came just before the allocations); a fifth, at least.
  const int64_t in_window =
      q->scalar_int("SELECT COUNT(*) " + snapshots + " AND \"Timestamp(ns)\" > " + end +
                    " AND \"Timestamp(ns)\" <= " + std::to_string(alloc_end + 500'000'000));
  EXPECT_GE(in_window, 10) << "memory samples in the 500 ms after the allocations";
  // And they show the 64 MiB the program touched, from the first one after it did.
  const std::string app_reserved = "CAST(json_extract(Attr, '$.app_reserved') AS INTEGER)";
  const int64_t before = q->scalar_int("SELECT " + app_reserved + " " + snapshots +
                                       " AND \"Timestamp(ns)\" < (SELECT MIN(\"Timestamp(ns)\") " +
                                       allocs + ") ORDER BY \"Timestamp(ns)\" DESC LIMIT 1");
  const int64_t after =
      q->scalar_int("SELECT " + app_reserved + " " + snapshots + " AND \"Timestamp(ns)\" > " + end +
                    " ORDER BY \"Timestamp(ns)\" LIMIT 1");
  ASSERT_GT(before, 0);
  EXPECT_GE(after - before, 60 * kMiB) << "before " << before << ", after " << after;
  EXPECT_EQ(q->scalar_int("SELECT events_dropped + events_lost + late_events + unmatched_frees "
                          "FROM memtap_session"),
            0)
      << memtap_session_text(*q);
}

}  // namespace
}  // namespace memtap::e2e
