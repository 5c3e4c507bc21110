// See program_run.h.
#include "monitor/live/program_run.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/endpoint.h"
#include "monitor/live/live_support.h"
#include "monitor/live/preload_obstacle.h"
#include "monitor/store/recording_reserve.h"

extern char** environ;

namespace memtap {

namespace {

// The `memtap` Python package beside the agent (see the top of this file), or "".
std::string python_package_dir(const std::string& agent) {
  std::string dir = agent.substr(0, agent.rfind('/')) + "/python";
  return access((dir + "/memtap/__init__.py").c_str(), R_OK) == 0 ? dir : "";
}

// Reaps every finished descendant (we are their subreaper); returns true once `child`
// has been reaped, with its status.
bool reap(pid_t child, int* child_status) {
  bool child_done = false;
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid == child) {
      *child_status = status;
      child_done = true;
    }
  }
  return child_done;
}

}  // namespace

bool valid_stacks(const std::string& list) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string kind = list.substr(start, end - start);
    if (kind != "python" && kind != "c") return false;
    start = end + 1;
  }
  return true;
}

bool parse_size(const std::string& text, uint64_t* bytes) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  double value = strtod(begin, &end);
  if (end == begin || errno != 0 || !(value >= 0) || !isdigit((unsigned char)text[0])) {
    return false;
  }
  // "12.97 GiB" as memtap report prints it, as well as "12.97GiB".
  if (*end == ' ') ++end;
  std::string unit(end);
  for (char& c : unit) c = char(tolower((unsigned char)c));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "k" || unit == "kib") scale = 1024.0;
  if (unit == "m" || unit == "mib") scale = 1024.0 * 1024;
  if (unit == "g" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  if (scale == 0 || value * scale > 1e18) return false;
  // Bytes are whole; a figure in a larger unit, as a report rounds it, is the nearest byte.
  if (scale == 1 && value != std::floor(value)) return false;
  *bytes = uint64_t(std::llround(value * scale));
  return true;
}

std::string resolve_program(const std::string& name) {
  auto runnable = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return runnable(name) ? name : "";
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (runnable(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

std::vector<std::string> child_environment(const RunOptions& o, const std::string& agent,
                                           const std::string& endpoint) {
  std::vector<std::pair<std::string, std::string>> set = {{"MEMTAP_ENDPOINT", endpoint}};
  if (!o.keys.empty()) {
    // Absolute: a program that changes directory and starts another still finds the keys.
    char absolute[PATH_MAX];
    set.push_back({"MEMTAP_KEYS", realpath(o.keys.c_str(), absolute) ? absolute : o.keys});
  }
  if (!o.stacks.empty()) set.push_back({"MEMTAP_STACKS", o.stacks});
  if (!o.stack_min_size.empty()) set.push_back({"MEMTAP_STACK_MIN_SIZE", o.stack_min_size});
  if (o.torch_ops) set.push_back({"MEMTAP_TORCH_OPS", "1"});
  if (!o.torch_pool) set.push_back({"MEMTAP_TORCH_POOL", "0"});
  const std::string package = python_package_dir(agent);
  std::string preload = agent;
  std::string pythonpath = package;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    std::string value = kv.size() > name.size() ? kv.substr(name.size() + 1) : "";
    bool replaced = false;
    for (const auto& [n, v] : set) replaced = replaced || n == name;
    if (name == "LD_PRELOAD") {
      if (!value.empty()) preload += ":" + value;
    } else if (name == "PYTHONPATH") {
      if (!value.empty()) pythonpath += (pythonpath.empty() ? "" : ":") + value;
    } else if (!replaced) {
      env.push_back(kv);
    }
  }
  env.push_back("LD_PRELOAD=" + preload);
  if (!pythonpath.empty()) env.push_back("PYTHONPATH=" + pythonpath);
  for (const auto& [n, v] : set) env.push_back(n + "=" + v);
  return env;
}

std::string program_problem(const std::string& name) {
  if (!resolve_program(name).empty()) return "";
  return "cannot run '" + name + "': no such program" +
         (name.find('/') == std::string::npos ? " in PATH" : "");
}

pid_t spawn_program(const RunOptions& o, const std::vector<std::string>& env, std::string* error) {
  std::vector<char*> argv, envp;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // Everything above is built before fork: the child only execs (we are multithreaded).
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + strerror(errno);
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    restore_user_file_size_limit_in_child();  // the recording's reserve is memtap's own
    execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    (void)!write(pipefd[1], &err, sizeof err);
    _exit(127);
  }
  close(pipefd[1]);
  if (pid < 0) {
    *error = std::string("fork: ") + strerror(errno);
    close(pipefd[0]);
    return -1;
  }
  int err = 0;
  if (read(pipefd[0], &err, sizeof err) == sizeof err) {
    *error = "cannot run '" + o.command[0] + "': " + strerror(err);
    close(pipefd[0]);
    waitpid(pid, nullptr, 0);
    return -1;
  }
  close(pipefd[0]);
  return pid;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The signal that ended a program, by name: "SIGABRT (core dumped)".
std::string signal_text(int status) {
  const char* abbrev = sigabbrev_np(WTERMSIG(status));
  std::string text =
      abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(WTERMSIG(status));
  if (WCOREDUMP(status)) text += " (core dumped)";
  return text;
}

// How the program ended, in words (memtap_meta's `ended_by`): "exit code 3", "signal SIGABRT".
std::string end_text(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + signal_text(status);
  return "unknown";
}

std::unique_ptr<ProgramRun> ProgramRun::start(const RunOptions& o, std::string* error,
                                              int* exit_code, EventTap tap) {
  *exit_code = 2;
  if (std::string why = program_problem(o.command[0]); !why.empty()) {
    *error = why;
    *exit_code = 127;
    return nullptr;
  }
  const std::string agent = find_agent_library();
  if (agent.empty()) {
    *error = "cannot find libmemtap_agent.so next to the memtap executable";
    return nullptr;
  }
  if (python_package_dir(agent).empty() &&
      (o.torch_ops || o.stacks.find("python") != std::string::npos)) {
    fprintf(stderr,
            "memtap run: the memtap Python package is not beside the agent (%s/python): "
            "--stacks python and --torch-ops will do nothing\n",
            agent.substr(0, agent.rfind('/')).c_str());
  }
  std::unique_ptr<ProgramRun> run(new ProgramRun);
  run->options_ = o;
  run->out_ = o.out.empty() ? default_db_path() : o.out;
  const std::string endpoint = user_ipc_endpoint("run-" + std::to_string(getpid()), error);
  if (endpoint.empty()) return nullptr;
  MemscopeWriterOptions store;
  if (!recording_options(o.compact, &store, error)) return nullptr;
  ListenSecurity security;
  security.keys_dir = o.keys;
  run->rec_ =
      LiveRecording::start(endpoint, run->out_, store, error, std::move(tap), security, o.limits);
  if (!run->rec_) return nullptr;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  run->child_ = spawn_program(o, child_environment(o, agent, endpoint), error);
  if (run->child_ < 0) {
    *exit_code = 127;
    return nullptr;
  }
  run->rec_->set_program_running(true);
  run->progress_every_ = std::chrono::milliseconds(progress_interval_ms());
  run->next_progress_ = std::chrono::steady_clock::now() + run->progress_every_;
  return run;
}

ProgramRun::~ProgramRun() = default;

bool ProgramRun::step(int timeout_ms) {
  using namespace std::chrono;
  const milliseconds grace(500);
  rec_->pump(timeout_ms);
  if (progress_every_.count() != 0 && steady_clock::now() >= next_progress_) {
    fprintf(stderr, "%s\n", rec_->progress_line().c_str());
    next_progress_ += progress_every_;
  }
  if (interrupted() && forwarded_ != last_signal()) {
    forwarded_ = last_signal();
    if (!child_done_) kill(child_, forwarded_);  // the program decides how to end
  }
  if (!child_done_ && reap(child_, &child_status_)) {
    child_done_ = true;
    child_exit_time_ = steady_clock::now();
    rec_->process_died(uint32_t(child_),
                       duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count());
    // Nothing to protect any more: the recording is finished at full speed.
    rec_->set_program_running(false);
    if (progress_every_.count() != 0) fprintf(stderr, "%s\n", rec_->progress_line().c_str());
  } else if (child_done_) {
    reap(child_, &child_status_);
  }
  if (!child_done_) return false;
  rec_->check_liveness(grace);
  if (rec_->any_running()) {
    // Descendants that outlive the program (a daemon it started) are recorded until
    // they end, or until the user says stop. Said only while one is alive: a monitor still
    // taking in the rows of workers that have exited is finishing, not waiting on them
    // (it said "still recording" after every DataLoader script that it was behind on).
    if (interrupted()) return true;
    if (!told_waiting_ && steady_clock::now() - child_exit_time_ >= seconds(2) &&
        rec_->any_alive()) {
      fprintf(stderr,
              "memtap run: '%s' exited; still recording processes it started (Ctrl-C to "
              "stop)\n",
              options_.command[0].c_str());
      told_waiting_ = true;
    }
    return false;
  }
  // Its Hello or Bye may still be queued: finish once it has been seen, or after a
  // quiet grace period if the agent never reported (a static program, say). Once the forks
  // among the rows held back are out, too: an applied fork makes the child a process the
  // session waits for, and a daemon started just before the program's exit, whose Hello
  // had not come, was left running, unrecorded (beside busy loops). Only forks: waiting for
  // every held row made each run 0.25 s longer (the horizon). At most a few seconds: a
  // fork stamped in the future must not keep memtap from ending.
  if (rec_->saw_pid(uint32_t(child_))) {
    return rec_->held_forks() == 0 || steady_clock::now() - child_exit_time_ >= seconds(5);
  }
  if (steady_clock::now() - child_exit_time_ >= grace &&
      steady_clock::now() - rec_->last_message() >= grace) {
    if (WIFSIGNALED(child_status_)) {
      // A crash, not a program the agent could not enter: say which.
      fprintf(stderr,
              "memtap run: no events from '%s': it was killed by %s before the agent could "
              "send anything\n",
              options_.command[0].c_str(), signal_text(child_status_).c_str());
    } else if (std::string why = preload_obstacle(resolve_program(options_.command[0]));
               !why.empty()) {
      fprintf(stderr, "memtap run: no events from '%s': %s\n", options_.command[0].c_str(),
              why.c_str());
    } else {
      fprintf(stderr,
              "memtap run: no events from '%s': the agent was not loaded (LD_PRELOAD removed "
              "from its environment, or MEMTAP_DISABLE set), or sent nothing before the "
              "program ended\n",
              options_.command[0].c_str());
    }
    return true;
  }
  return false;
}

int ProgramRun::finish() {
  using namespace std::chrono;
  // With progress lines asked for, show the engine and the writer catching up too.
  while (progress_every_.count() != 0 && !rec_->caught_up() && !interrupted()) {
    rec_->pump(20);
    if (steady_clock::now() >= next_progress_) {
      fprintf(stderr, "%s\n", rec_->progress_line().c_str());
      next_progress_ += progress_every_;
    }
  }
  std::string cmdline;
  for (const std::string& a : options_.command) cmdline += (cmdline.empty() ? "" : " ") + a;
  const int code = exit_code_of(child_status_);
  std::vector<std::pair<std::string, std::string>> meta = {{"memtap_version", MEMTAP_VERSION},
                                                           {"mode", "run"},
                                                           {"command", cmdline},
                                                           {"exit_code", std::to_string(code)},
                                                           {"ended_by", end_text(child_status_)}};
  std::string error;
  const bool written = rec_->finish(meta, &error);
  // A recording that stopped was said when it did, and the summary says where; any other
  // failure is said here.
  if (!written && rec_->writer().stopped().reason.empty()) {
    fprintf(stderr, "memtap run: recording failed: %s\n", error.c_str());
  }
  // The live report whatever became of the file: the analyses saw every event.
  rec_->print_summary(stderr, written);
  if (child_done_ && WIFSIGNALED(child_status_)) {
    fprintf(stderr, "memtap run: '%s' was killed by %s\n", options_.command[0].c_str(),
            signal_text(child_status_).c_str());
  }
  // The last line is final: the session's held rows released, analysed and written.
  if (progress_every_.count() != 0) fprintf(stderr, "%s\n", rec_->progress_line().c_str());
  // The wait after the program is the recorder catching up (SQLite is the slow part):
  // say so rather than look hung.
  auto catch_up = duration_cast<milliseconds>(steady_clock::now() - child_exit_time_);
  if (written && child_done_ && catch_up >= seconds(1)) {
    fprintf(stderr, "memtap: the recording was complete %.1f s after the program ended\n",
            double(catch_up.count()) / 1000);
  }
  // A recording that failed or stopped is a failure for whoever relies on it (CI): the
  // program's own failure first, else 2.
  if (!written) return code != 0 ? code : 2;
  return code;
}

}  // namespace memtap
