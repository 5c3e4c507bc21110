// `memtap run`: start a program with the agent preloaded, record what it (and every
// process it forks or execs) streams, and exit with the program's exit code. The work is
// ProgramRun's (monitor/live/program_run.h); --gui hands the whole run to the window
// (gui_launch.h), which runs the program the same way.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/gui_launch.h"
#include "monitor/live/program_run.h"

namespace memtap {

namespace {

// The options of the run itself (the window's are gui_launch.h's), into *o.
void add_run_options(CLI::App* app, RunOptions* o) {
  app->add_option("-o", o->out, "the recording (default: ./memscope_dump_<YYYYmmddHHMMSS>.db)")
      ->type_name("OUT.db");
  app->add_flag("--compact", o->compact,
                "integer rows (~35 B an event, written twice as fast) with memscope_dump a view; "
                "memtap, SQL and pandas read it, MindStudio Insight does not (it wants a table: "
                "leave --compact out for it)");
  app->add_option("--connect", o->connect,
                  "stream into a monitor elsewhere (memtap record --listen), recording nothing "
                  "here")
      ->type_name("ENDPOINT");
  app->add_option("--keys", o->keys,
                  "the agent authenticates with the keys in DIR (MEMTAP_KEYS; memtap keygen), as "
                  "a monitor with --keys wants")
      ->type_name("DIR");
  add_checked_option(
      app, "--stacks", "python,c",
      [o](const std::string& v, std::string* error) {
        if (!valid_stacks(v)) {
          *error = "--stacks '" + v + "': expected python, c or python,c";
          return false;
        }
        o->stacks = v;
        return true;
      },
      "call stacks (Python, C or both) on allocations of at least --stack-min-size");
  add_checked_option(
      app, "--stack-min-size", "SIZE",
      [o](const std::string& v, std::string* error) {
        uint64_t bytes = 0;
        if (!parse_size(v, &bytes)) {
          *error = "--stack-min-size '" + v +
                   "' is not a size (bytes, or a number with KiB, MiB or GiB: 1MiB)";
          return false;
        }
        o->stack_min_size = std::to_string(bytes);
        return true;
      },
      "the smallest allocation that gets a stack (bytes, or with KiB/MiB/GiB: 1MiB)");
  app->add_flag("--torch-ops", o->torch_ops,
                "PyTorch operators as OP_LAUNCH events, naming the memory they allocate");
  app->add_flag_callback(
      "--no-torch-pool", [o] { o->torch_pool = false; },
      "leave PyTorch's CUDA caching allocator unwatched (by default its blocks are the PTA layer; "
      "the first run compiles a small tracker against the installed torch, cached in "
      "~/.cache/memtap)");
  add_checked_option(
      app, "--max-processes", "N",
      [o](const std::string& v, std::string* error) {
        return parse_max_processes(v, &o->limits.max_processes, error);
      },
      "how many processes may be recorded at once (4096), as for record");
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  GuiRequest gui;
  std::string error;
  CLI::App app;
  describe_command(&app, "run", "memtap run [options] [--] PROGRAM [ARGS...]",
                   "Run PROGRAM with the agent preloaded and record its memory events (and those "
                   "of every process it starts); exits with PROGRAM's exit code. Every argument "
                   "after PROGRAM is PROGRAM's own. `import memtap` works in Python programs it "
                   "runs.");
  add_run_options(&app, &o);
  add_gui_options(&app, &gui);
  if (const int code = parse_command_line(&app, args, &o.command); code >= 0) return code;
  if (o.command.empty()) return usage_error("run", "no program given");
  if (app.count("--max-processes") != 0 && !o.connect.empty()) {
    return usage_error("run",
                       "--max-processes limits a monitor here; with --connect the one elsewhere "
                       "has its own (memtap record --max-processes)");
  }
  if (gui.wanted) {
    if (!o.connect.empty()) {
      fprintf(stderr, "memtap run: --gui records here; it cannot be combined with --connect\n");
      return 2;
    }
    // Only returns when the window cannot be shown; then the run goes on headless.
    if (!launch_gui_run(args, o.command.size(), gui, &error))
      fprintf(stderr, "memtap run: %s\n", error.c_str());
  } else if (gui.any_window_option()) {
    fprintf(stderr, "memtap run: %s needs --gui\n", gui.first_window_option.c_str());
    return 2;
  }
  install_stop_signals();

  if (!o.connect.empty()) {
    // Streaming into a monitor that runs elsewhere: no recording here.
    if (const std::string why = program_problem(o.command[0]); !why.empty()) {
      fprintf(stderr, "memtap run: %s\n", why.c_str());
      return 127;
    }
    const std::string agent = find_agent_library();
    if (agent.empty()) {
      fprintf(stderr, "memtap run: cannot find libmemtap_agent.so next to the memtap executable\n");
      return 2;
    }
    pid_t pid = spawn_program(o, child_environment(o, agent, o.connect), &error);
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

  int code = 0;
  auto run = ProgramRun::start(o, &error, &code);
  if (!run) {
    fprintf(stderr, "memtap run: %s\n", error.c_str());
    return code;
  }
  while (!run->step(20)) {
  }
  return run->finish();
}

}  // namespace memtap
