// One traced program and its recording: what `memtap run` does, as steps a caller drives,
// so that the headless command and the window's live mode (memtap-gui --run) run programs
// the same way.
//
// The child's environment carries what the options ask of the agent (MEMTAP_STACKS,
// MEMTAP_STACK_MIN_SIZE, MEMTAP_TORCH_OPS), and PYTHONPATH starts with the `memtap` Python
// package beside the agent (<agent dir>/python: <build>/lib/python, <prefix>/lib/memtap/python),
// whose sitecustomize turns on Python stacks and --torch-ops inside the interpreter.
//
// memtap becomes a child subreaper, so that orphaned descendants (a forked worker whose
// parent already exited) are reaped here and seen to die, rather than lingering as
// zombies that look alive.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "monitor/live/live_recording.h"

namespace memtap {

struct RunOptions {
  std::string out;             // -o; "" for ./memscope_dump_<time>.db
  std::string connect;         // --connect: stream into a monitor elsewhere, record nothing
  std::string keys;            // --keys: the agent's MEMTAP_KEYS (and here CURVE too)
  std::string stacks;          // "python", "c", "python,c"; "" leaves MEMTAP_STACKS alone
  std::string stack_min_size;  // bytes, as text; "" leaves MEMTAP_STACK_MIN_SIZE alone
  bool torch_ops = false;
  bool torch_pool = true;  // --no-torch-pool: MEMTAP_TORCH_POOL=0
  bool compact = false;
  SessionLimits limits;              // --max-processes (recording here only)
  std::vector<std::string> command;  // the program and its arguments
};

// "python", "c", "python,c" (either order): what --stacks takes.
bool valid_stacks(const std::string& list);

// "1048576", "512KiB", "1MiB", "1.5GiB", "12.97 GiB" (K, M, G and any case accepted) -> bytes,
// the nearest byte to a fraction of a larger unit; a fraction of a byte is refused.
bool parse_size(const std::string& text, uint64_t* bytes);

// The program as execvp would find it, or "" if it would not.
std::string resolve_program(const std::string& name);
// "" when execvp would find the program, else one line: "cannot run 'X': no such program".
std::string program_problem(const std::string& name);

// The environment for the traced program: the agent prepended to LD_PRELOAD, where to
// stream, what the options ask of the agent, and the Python package first on PYTHONPATH.
std::vector<std::string> child_environment(const RunOptions& o, const std::string& agent,
                                           const std::string& endpoint);

// Starts o.command with `env`; its pid, or -1 with *error ("cannot run 'X': why").
pid_t spawn_program(const RunOptions& o, const std::vector<std::string>& env, std::string* error);

int exit_code_of(int wait_status);

class ProgramRun {
 public:
  // Checks the program and the agent, starts the recording (o.out) on a fresh per-user IPC
  // endpoint, then the program. While the program runs, the recording's threads stand
  // behind it (LiveRecording::set_program_running). nullptr with *error (one line) and
  // *exit_code (127: the program cannot run; 2: anything else) when any of that fails.
  // `tap` sees every batch of the live analyses (LiveRecording::start).
  static std::unique_ptr<ProgramRun> start(const RunOptions& o, std::string* error, int* exit_code,
                                           EventTap tap = {});
  ~ProgramRun();

  // One round: receives for up to `timeout_ms`, forwards a stop signal to the program, reaps
  // it and any orphaned descendant. True once the run is over: the program ended and every
  // process it started has ended too (or the user asked to stop), and its last messages are
  // in.
  bool step(int timeout_ms);
  bool program_ended() const { return child_done_; }

  // Writes the recording and prints the summary to stderr. Returns the program's exit code
  // (or 2 if the recording failed or stopped early, a full disk, while the program
  // succeeded).
  int finish();

  LiveRecording& recording() { return *rec_; }
  const RunOptions& options() const { return options_; }
  const std::string& output() const { return out_; }
  pid_t pid() const { return child_; }

 private:
  ProgramRun() = default;

  RunOptions options_;
  std::string out_;
  std::unique_ptr<LiveRecording> rec_;
  pid_t child_ = -1;
  int child_status_ = 0;
  bool child_done_ = false;
  int forwarded_ = 0;
  bool told_waiting_ = false;
  std::chrono::steady_clock::time_point child_exit_time_;
  std::chrono::milliseconds progress_every_{0};
  std::chrono::steady_clock::time_point next_progress_;
};

}  // namespace memtap
