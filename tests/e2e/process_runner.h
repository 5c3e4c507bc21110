// Real child processes for the end-to-end tests: fork/exec with stdout and stderr captured
// through pipes (stdin optionally), a chosen environment and working directory, signals,
// and waiting with a deadline.
//
// Waiting never sleeps for a fixed time: it polls the pipes and a pidfd of the child, so a
// test resumes the moment the child writes or exits, and a hung child is killed at the
// deadline (reported as timed_out) instead of hanging the suite.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace memtap::e2e {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is the program (a path; PATH is not searched)
  // "NAME=value" entries that replace or add to the test's own environment.
  std::vector<std::string> env_set;
  // Names removed from the environment (applied before env_set).
  std::vector<std::string> env_unset;
  std::string cwd;          // "" keeps the test's working directory
  bool pipe_stdin = false;  // false: stdin is /dev/null
  // Non-empty: the process runs as if on another machine of that name, in a UTS namespace of
  // its own (in a user namespace that maps the test's uid and gid to themselves, which lets
  // it set the name without privileges). Where the kernel refuses either, start() fails.
  std::string hostname;
};

struct ProcessResult {
  bool exited = false;  // normal exit: exit_code is valid
  int exit_code = -1;
  int term_signal = 0;  // killed by this signal (exited == false)
  bool timed_out = false;
  // When timed out: the processes that still held its output, as they were before the
  // kill (stuck_processes.h), so that a failure tells a slow run from a stuck one.
  std::string at_timeout;
  std::string out;  // everything written to stdout
  std::string err;  // everything written to stderr
};

// The test's environment as `spec` changes it ("NAME=value" entries), for a child of it.
std::vector<std::string> child_environment(const ProcessSpec& spec);

// "exit 3", "signal 9", "timed out"; for failure messages.
std::string describe(const ProcessResult& r);

class Process {
 public:
  // Starts the process. nullptr with *error if the pipes, fork or exec failed (an exec
  // failure is reported here, not as an exit code).
  static std::unique_ptr<Process> start(const ProcessSpec& spec, std::string* error);
  // Kills (SIGKILL) and reaps the process if it is still running.
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool signal(int sig);

  // Writes to the child's stdin (spec.pipe_stdin); close_stdin sends EOF.
  bool write_stdin(const std::string& text);
  void close_stdin();

  // Reads output until `done(out, err)` is true, the child has exited and closed its
  // pipes, or the timeout passes. Returns whether `done` became true.
  bool wait_for_output(
      const std::function<bool(const std::string& out, const std::string& err)>& done,
      std::chrono::milliseconds timeout);
  // Output read so far.
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  // Reads both pipes to their end and reaps the child. At the deadline the child, and every
  // process still holding its stdout or stderr (its descendants), is described and killed
  // with SIGKILL, and the result says timed_out.
  ProcessResult wait(std::chrono::milliseconds timeout);

 private:
  Process() = default;
  // One round of poll over the open pipes and the pidfd; false once the deadline passed.
  bool pump(std::chrono::steady_clock::time_point deadline);
  void reap(bool block);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdin_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string out_;
  std::string err_;
};

// Starts, waits and returns the result; a start failure reads as exit_code -1 with the
// reason in err.
ProcessResult run_process(const ProcessSpec& spec,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Calls `condition` until it is true or the timeout passes, with a short pause between
// calls (for conditions no file descriptor can signal, such as a socket file appearing).
bool poll_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// Nanoseconds since the Unix epoch (CLOCK_REALTIME), the clock of `Timestamp(ns)`.
int64_t realtime_now_ns();

}  // namespace memtap::e2e
