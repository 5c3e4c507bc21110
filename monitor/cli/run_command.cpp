// `memtap run`: start a program with the agent preloaded, record what it (and every
// process it forks or execs) streams, and exit with the program's exit code. The work is
// ProgramRun's (monitor/live/program_run.h); --gui hands the whole run to the window
// (gui_launch.h), which runs the program the same way, with the same options
// (run_options.h).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/gui_launch.h"
#include "monitor/cli/run_options.h"
#include "monitor/live/program_run.h"

namespace memtap {

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  GuiRequest gui;
  std::string error;
  CLI::App app;
  declare_run_command(&app, &o);
  add_gui_options(&app, &gui);
  if (const int code = parse_command_line(&app, args, &o.command); code >= 0) return code;
  if (const std::string problem = run_options_problem(app, o, gui.wanted); !problem.empty()) {
    return usage_error("run", problem);
  }
  if (gui.wanted) {
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
