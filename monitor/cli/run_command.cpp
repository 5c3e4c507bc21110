// `memtap run`: start a program with the agent preloaded, record what it (and every
// process it forks or execs) streams, and exit with the program's exit code.
//
// The child's environment carries what the options ask of the agent (MEMTAP_STACKS,
// MEMTAP_STACK_MIN_SIZE, MEMTAP_TORCH_OPS), and PYTHONPATH starts with the `memtap` Python
// package beside the agent (<agent dir>/python: <build>/lib/python, <prefix>/lib/memtap/python),
// whose sitecustomize turns on Python stacks and --torch-ops inside the interpreter.
//
// memtap becomes a child subreaper, so that orphaned descendants (a forked worker whose
// parent already exited) are reaped here and seen to die, rather than lingering as
// zombies that look alive.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/endpoint.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/recording.h"

extern char** environ;

namespace memtap {

namespace {

struct RunOptions {
  std::string out;
  std::string connect;
  std::string stacks;          // "python", "c", "python,c"; "" leaves MEMTAP_STACKS alone
  std::string stack_min_size;  // bytes, as text; "" leaves MEMTAP_STACK_MIN_SIZE alone
  bool torch_ops = false;
  bool compact = false;
  std::vector<std::string> command;
};

// "1048576", "512KiB", "1MiB", "1.5GiB" (K, M, G and any case accepted) -> bytes.
bool parse_size(const std::string& text, uint64_t* bytes) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  double value = strtod(begin, &end);
  if (end == begin || errno != 0 || !(value >= 0) || !isdigit((unsigned char)text[0])) {
    return false;
  }
  std::string unit(end);
  for (char& c : unit) c = char(tolower((unsigned char)c));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "k" || unit == "kib") scale = 1024.0;
  if (unit == "m" || unit == "mib") scale = 1024.0 * 1024;
  if (unit == "g" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  if (scale == 0 || value * scale > 1e18) return false;
  double b = value * scale;
  if (b != double(uint64_t(b))) return false;  // a fraction of a byte
  *bytes = uint64_t(b);
  return true;
}

// "python", "c", "python,c" (either order); false for anything else.
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

bool parse(const std::vector<std::string>& args, RunOptions* o) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-o" && i + 1 < args.size()) {
      o->out = args[++i];
    } else if (a == "--connect" && i + 1 < args.size()) {
      o->connect = args[++i];
    } else if (a == "--stacks" && i + 1 < args.size()) {
      o->stacks = args[++i];
      if (!valid_stacks(o->stacks)) {
        fprintf(stderr, "memtap run: --stacks '%s': expected python, c or python,c\n",
                o->stacks.c_str());
        return false;
      }
    } else if (a == "--stack-min-size" && i + 1 < args.size()) {
      uint64_t bytes = 0;
      if (!parse_size(args[++i], &bytes)) {
        fprintf(stderr,
                "memtap run: --stack-min-size '%s' is not a size (bytes, or a number with "
                "KiB, MiB or GiB: 1MiB)\n",
                args[i].c_str());
        return false;
      }
      o->stack_min_size = std::to_string(bytes);
    } else if (a == "--torch-ops") {
      o->torch_ops = true;
    } else if (a == "--compact") {
      o->compact = true;
    } else if (!a.empty() && a[0] == '-') {
      fprintf(stderr, "memtap run: unknown option '%s'%s\n", a.c_str(),
              a == "-o" || a == "--connect" || a == "--stacks" || a == "--stack-min-size"
                  ? " (it needs a value)"
                  : "");
      return false;
    } else {
      break;  // the program, without "--"
    }
  }
  o->command.assign(args.begin() + long(i), args.end());
  if (o->command.empty()) {
    fprintf(stderr,
            "memtap run: no program given (memtap run [-o out.db] [--stacks python,c] -- "
            "PROGRAM ARGS...)\n");
    return false;
  }
  return true;
}

// The program as execvp would find it, or "" if it would not.
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

// The `memtap` Python package beside the agent (see the top of this file), or "".
std::string python_package_dir(const std::string& agent) {
  std::string dir = agent.substr(0, agent.rfind('/')) + "/python";
  return access((dir + "/memtap/__init__.py").c_str(), R_OK) == 0 ? dir : "";
}

// Environment for the child: the agent prepended to LD_PRELOAD, where to stream, what the
// options ask of the agent, and the Python package first on PYTHONPATH.
std::vector<std::string> child_environment(const RunOptions& o, const std::string& agent,
                                           const std::string& endpoint) {
  std::vector<std::pair<std::string, std::string>> set = {{"MEMTAP_ENDPOINT", endpoint}};
  if (!o.stacks.empty()) set.push_back({"MEMTAP_STACKS", o.stacks});
  if (!o.stack_min_size.empty()) set.push_back({"MEMTAP_STACK_MIN_SIZE", o.stack_min_size});
  if (o.torch_ops) set.push_back({"MEMTAP_TORCH_OPS", "1"});
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

pid_t spawn(const RunOptions& o, const std::vector<std::string>& env, std::string* error) {
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

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  if (!parse(args, &o)) return 2;
  std::string program = resolve_program(o.command[0]);
  if (program.empty()) {
    fprintf(stderr, "memtap run: cannot run '%s': no such program%s\n", o.command[0].c_str(),
            o.command[0].find('/') == std::string::npos ? " in PATH" : "");
    return 127;
  }
  std::string agent = find_agent_library();
  if (agent.empty()) {
    fprintf(stderr, "memtap run: cannot find libmemtap_agent.so next to the memtap executable\n");
    return 2;
  }
  if (python_package_dir(agent).empty() &&
      (o.torch_ops || o.stacks.find("python") != std::string::npos)) {
    fprintf(stderr,
            "memtap run: the memtap Python package is not beside the agent (%s/python): "
            "--stacks python and --torch-ops will do nothing\n",
            agent.substr(0, agent.rfind('/')).c_str());
  }
  install_stop_signals();
  std::string error;

  if (!o.connect.empty()) {
    // Streaming into a monitor that runs elsewhere: no recording here.
    pid_t pid = spawn(o, child_environment(o, agent, o.connect), &error);
    if (pid < 0) {
      fprintf(stderr, "memtap run: %s\n", error.c_str());
      return 127;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      if (interrupted()) kill(pid, last_signal());
    }
    return exit_code_of(status);
  }

  std::string out = o.out.empty() ? default_db_path() : o.out;
  std::string endpoint = user_ipc_endpoint("run-" + std::to_string(getpid()), &error);
  if (endpoint.empty()) {
    fprintf(stderr, "memtap run: %s\n", error.c_str());
    return 2;
  }
  MemscopeWriterOptions store;
  if (!recording_options(o.compact, &store, &error)) {
    fprintf(stderr, "memtap run: %s\n", error.c_str());
    return 2;
  }
  auto rec = LiveRecording::start(endpoint, out, store, &error);
  if (!rec) {
    fprintf(stderr, "memtap run: %s\n", error.c_str());
    return 2;
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  yield_cpu_to_the_program(false);
  pid_t child = spawn(o, child_environment(o, agent, endpoint), &error);
  if (child < 0) {
    fprintf(stderr, "memtap run: %s\n", error.c_str());
    return 127;
  }
  yield_cpu_to_the_program(true);

  using namespace std::chrono;
  const milliseconds grace(500);
  int child_status = 0;
  bool child_done = false;
  int forwarded = 0;
  steady_clock::time_point child_exit_time;
  bool told_waiting = false;
  const milliseconds progress_every(progress_interval_ms());
  steady_clock::time_point next_progress = steady_clock::now() + progress_every;
  auto progress = [&] {
    if (progress_every.count() == 0 || steady_clock::now() < next_progress) return;
    fprintf(stderr, "%s\n", rec->progress_line().c_str());
    next_progress += progress_every;
  };
  for (;;) {
    rec->pump(20);
    progress();
    if (interrupted() && forwarded != last_signal()) {
      forwarded = last_signal();
      if (!child_done) kill(child, forwarded);  // the program decides how to end
    }
    if (!child_done && reap(child, &child_status)) {
      child_done = true;
      child_exit_time = steady_clock::now();
    } else if (child_done) {
      reap(child, &child_status);
    }
    if (!child_done) continue;
    rec->check_liveness(grace);
    if (rec->any_running()) {
      // Descendants that outlive the program (a daemon it started) are recorded until
      // they end, or until the user says stop.
      if (interrupted()) break;
      if (!told_waiting && steady_clock::now() - child_exit_time >= seconds(2)) {
        fprintf(stderr,
                "memtap run: '%s' exited; still recording processes it started (Ctrl-C to "
                "stop)\n",
                o.command[0].c_str());
        told_waiting = true;
      }
      continue;
    }
    // Its Hello or Bye may still be queued: finish once it has been seen, or after a
    // quiet grace period if the agent never reported (a static program, say).
    if (rec->saw_pid(uint32_t(child))) break;
    if (steady_clock::now() - child_exit_time >= grace &&
        steady_clock::now() - rec->last_message() >= grace) {
      fprintf(stderr,
              "memtap run: no events from '%s': the agent was not loaded (statically linked "
              "or setuid program?)\n",
              o.command[0].c_str());
      break;
    }
  }

  // With progress lines asked for, show the engine and the writer catching up too.
  while (progress_every.count() != 0 && !rec->caught_up() && !interrupted()) {
    rec->pump(20);
    progress();
  }

  std::string cmdline;
  for (const std::string& a : o.command) cmdline += (cmdline.empty() ? "" : " ") + a;
  std::vector<std::pair<std::string, std::string>> meta = {
      {"memtap_version", MEMTAP_VERSION},
      {"mode", "run"},
      {"command", cmdline},
      {"exit_code", std::to_string(exit_code_of(child_status))}};
  int code = exit_code_of(child_status);
  if (!rec->finish(meta, &error)) {
    fprintf(stderr, "memtap run: recording failed: %s\n", error.c_str());
    return code != 0 ? code : 2;
  }
  rec->print_summary(stderr);
  // The last line is final: the session's held rows released, analysed and written.
  if (progress_every.count() != 0) fprintf(stderr, "%s\n", rec->progress_line().c_str());
  // The wait after the program is the recorder catching up (SQLite is the slow part):
  // say so rather than look hung.
  auto catch_up = duration_cast<milliseconds>(steady_clock::now() - child_exit_time);
  if (catch_up >= seconds(1)) {
    fprintf(stderr, "memtap: the recording was complete %.1f s after the program ended\n",
            double(catch_up.count()) / 1000);
  }
  return code;
}

}  // namespace memtap
