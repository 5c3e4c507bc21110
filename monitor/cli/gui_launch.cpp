// See gui_launch.h.
#include "monitor/cli/gui_launch.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "monitor/live/live_support.h"

#ifndef MEMTAP_GUI_MISSING_REASON
#define MEMTAP_GUI_MISSING_REASON ""
#endif

namespace memtap {

namespace {

std::string gui_path() {
  return executable_dir() + "/memtap-gui";
}

bool has_display() {
  for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
    const char* value = getenv(v);
    if (value != nullptr && *value != '\0') return true;
  }
  return false;
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
  if (!offscreen && !has_display()) {
    return "no display (DISPLAY and WAYLAND_DISPLAY are unset)";
  }
  return "";
}

ExtraOptionFn gui_option_parser(GuiRequest* request) {
  return [request](const std::vector<std::string>& args, size_t i, std::string* error) -> size_t {
    const std::string& a = args[i];
    if (a == "--gui") {
      request->wanted = true;
      return 1;
    }
    if (a == "--stats") {
      if (request->first_window_option.empty()) request->first_window_option = a;
      return 1;
    }
    for (const char* with_value :
         {"--screenshot", "--screenshot-after", "--size", "--view", "--device"}) {
      if (a != with_value) continue;
      if (i + 1 >= args.size()) {
        *error = a + " needs a value";
        return 0;
      }
      if (request->first_window_option.empty()) request->first_window_option = a;
      if (a == "--screenshot") request->screenshot = true;
      return 2;
    }
    return 0;
  };
}

bool launch_gui_run(const std::vector<std::string>& run_args, size_t command_args,
                    const GuiRequest& request, std::string* error) {
  const std::string why = gui_unavailable_reason(request.screenshot);
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
  bool offscreen = false;
  for (const std::string& a : args) offscreen = offscreen || a == "--screenshot" || a == "--help";
  const std::string why = gui_unavailable_reason(offscreen);
  if (!why.empty()) {
    fprintf(stderr, "memtap monitor: %s%s\n", why.c_str(),
            has_display() ? "" : "; --screenshot FILE renders the window without one");
    return 2;
  }
  exec_gui(args);
}

}  // namespace memtap
