// See gui_launch.h.
#include "monitor/cli/gui_launch.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "monitor/cli/command_line.h"
#include "monitor/live/live_support.h"

#ifndef MEMTAP_GUI_MISSING_REASON
#define MEMTAP_GUI_MISSING_REASON ""
#endif

namespace memtap {

namespace {

std::string gui_path() {
  return executable_dir() + "/memtap-gui";
}

[[noreturn]] void exec_gui(const std::vector<std::string>& args) {
  const std::string path = gui_path();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  fprintf(stderr, "memtap: cannot start %s: %s\n", path.c_str(), strerror(errno));
  _exit(2);
}

}  // namespace

std::string gui_unavailable_reason(bool offscreen) {
  if (*MEMTAP_GUI_MISSING_REASON != '\0') {
    return std::string("the window was not built: ") + MEMTAP_GUI_MISSING_REASON;
  }
  if (access(gui_path().c_str(), X_OK) != 0) {
    return "the window (memtap-gui) is not beside memtap in " + executable_dir();
  }
  if (!offscreen && !display_available()) {
    return "no display (DISPLAY and WAYLAND_DISPLAY are unset)";
  }
  return "";
}

void add_gui_options(CLI::App* app, GuiRequest* request) {
  app->add_flag("--gui", request->wanted,
                "watch it live in the window (memtap-gui) while it records");
  // The window's options need --gui; the first one given is named when it is missing.
  const auto seen = [request](const std::string& name) {
    if (request->first_window_option.empty()) request->first_window_option = name;
  };
  add_window_options(app, &request->window, /*with_at=*/false, seen);
}

bool launch_gui_run(const std::vector<std::string>& run_args, size_t command_args,
                    const GuiRequest& request, std::string* error) {
  const std::string why = gui_unavailable_reason(!request.window.screenshot.empty());
  if (!why.empty()) {
    *error = why + ": recording without the window";
    return false;
  }
  std::vector<std::string> args = {"--run"};
  // The program's own arguments (the last command_args) pass as they are, "--gui" among them.
  const size_t options_end = run_args.size() - command_args;
  for (size_t i = 0; i < run_args.size(); ++i) {
    if (i < options_end && run_args[i] == "--gui") continue;
    args.push_back(run_args[i]);
  }
  exec_gui(args);
}

int monitor_command(const std::vector<std::string>& args) {
  WindowCommand command;
  if (const int code = parse_window_command(args, &command); code >= 0) return code;
  const std::string why = gui_unavailable_reason(!command.window.screenshot.empty());
  if (!why.empty()) {
    fprintf(stderr, "memtap monitor: %s%s\n", why.c_str(),
            display_available() ? "" : "; --screenshot FILE renders the window without one");
    return 2;
  }
  exec_gui(args);
}

}  // namespace memtap
