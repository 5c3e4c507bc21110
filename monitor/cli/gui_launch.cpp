// See gui_launch.h.
#include "monitor/cli/gui_launch.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "monitor/cli/command_line.h"
#include "monitor/gui/gui_options.h"
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

// The window's options, as `memtap run --gui` and `memtap monitor` take them; `seen` is told
// the name of each one given. Their values are memtap-gui's to check, --view's here too so
// that its names are in the help.
void add_window_options(CLI::App* app, const std::function<void(const std::string&)>& seen) {
  const auto noted = [app, seen](const std::string& name, const std::string& value_name,
                                 const std::string& help) {
    app->add_option_function<std::string>(
           name, [seen, name](const std::string&) { seen(name); }, help)
        ->type_name(value_name);
  };
  noted("--screenshot", "PNG",
        "render offscreen (no display needed) and write the picture: a recording once it is loaded "
        "and drawn, then exit; a live run --screenshot-after into it, then the run goes on to its "
        "end");
  noted("--screenshot-after", "DURATION", "3s (the default), 1500ms");
  noted("--size", "WxH", "the window's size (default 1600x1000)");
  std::string views;
  for (const std::string& v : gui::view_names()) views += (views.empty() ? "" : ", ") + v;
  add_checked_option(
      app, "--view", "NAME",
      [seen, views](const std::string& v, std::string* error) {
        const auto& names = gui::view_names();
        if (std::find(names.begin(), names.end(), v) == names.end()) {
          *error = "--view '" + v + "': expected one of " + views;
          return false;
        }
        seen("--view");
        return true;
      },
      "the view in front: " + views);
  noted("--device", "cpu|N",
        "the device shown: the host's memory or GPU N (the first process that has it)");
  app->add_flag_callback(
      "--stats", [seen] { seen("--stats"); },
      "at exit, print redraws per second and the frame-time histogram");
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

void add_gui_options(CLI::App* app, GuiRequest* request) {
  app->add_flag("--gui", request->wanted,
                "watch it live in the window (memtap-gui) while it records");
  // The window's options need --gui; the first one given is named when it is missing.
  const auto seen = [request](const std::string& name) {
    if (request->first_window_option.empty()) request->first_window_option = name;
  };
  add_window_options(app, [seen, request](const std::string& name) {
    seen(name);
    if (name == "--screenshot") request->screenshot = true;
  });
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
  CLI::App app;
  describe_command(&app, "monitor",
                   "memtap monitor FILE [window options]\n"
                   "       memtap monitor --listen ENDPOINT [options] [window options]",
                   "The window: open a recording (any file report reads), or watch every process "
                   "that streams to ENDPOINT live while recording it. --screenshot renders "
                   "offscreen (no display needed), writes the PNG and exits.");
  app.add_option("FILE", "the recording to open")->type_name("");
  app.add_option("-l,--listen",
                 "watch every process that streams to ENDPOINT (ipc://PATH, tcp://HOST:PORT) "
                 "live, recording it to -o")
      ->type_name("ENDPOINT");
  app.add_option("-o",
                 "with --listen: the recording (default: "
                 "./memscope_dump_<YYYYmmddHHMMSS>.db)")
      ->type_name("OUT.db");
  app.add_flag("--compact")->description("with --listen: integer rows, as for record");
  app.add_option("--keys",
                 "with --listen: accept only agents with a key of DIR (memtap "
                 "keygen), over CURVE")
      ->type_name("DIR");
  app.add_flag("--insecure")
      ->description("with --listen: accept unauthenticated agents beyond loopback");
  app.add_option("--max-processes",
                 "with --listen: how many processes may be recorded at once (4096)")
      ->type_name("N");
  add_window_options(&app, [&offscreen](const std::string& name) {
    offscreen = offscreen || name == "--screenshot";
  });
  app.add_option("--at",
                 "the instant the pool and breakdown show: seconds since the start (12.5s) or "
                 "peak")
      ->type_name("TIME");
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  const std::string why = gui_unavailable_reason(offscreen);
  if (!why.empty()) {
    fprintf(stderr, "memtap monitor: %s%s\n", why.c_str(),
            has_display() ? "" : "; --screenshot FILE renders the window without one");
    return 2;
  }
  exec_gui(args);
}

}  // namespace memtap
