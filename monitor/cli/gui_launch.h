// How the headless `memtap` hands over to the window, `memtap-gui`, a separate executable
// beside it: `memtap monitor ...` and `memtap run --gui ...` exec it. memtap itself never
// links Qt, so a node without a display or without Qt runs everything else.
#pragma once

#include <string>
#include <vector>

#include "monitor/cli/window_options.h"
#include "monitor/live/program_run.h"

namespace CLI {
class App;
}  // namespace CLI

namespace memtap {

// The window's options as `memtap run` takes them (memtap-gui parses the same ones).
struct GuiRequest {
  bool wanted = false;              // --gui
  WindowOptions window;             // checked here, used by memtap-gui
  std::string first_window_option;  // the first window option seen, for "X needs --gui"
  bool any_window_option() const { return !first_window_option.empty(); }
};

// Declares --gui and the window's options (window_options.h: --screenshot FILE,
// --screenshot-after DURATION, --size WxH, --view NAME, --device cpu|N, --stats) on `memtap
// run`'s `app`, into *request, each value checked as memtap-gui will check it.
void add_gui_options(CLI::App* app, GuiRequest* request);

// Replaces this process with `memtap-gui --run ARGS` (ARGS without the --gui among the
// options; the last command_args are the program and its arguments). Returns only when the
// window cannot be shown here, false with *error saying why in one line ending in
// "recording without the window"; the caller then runs headless.
bool launch_gui_run(const std::vector<std::string>& run_args, size_t command_args,
                    const GuiRequest& request, std::string* error);

// `memtap monitor ARGS`: checks ARGS (window_options.h), then replaces this process with
// `memtap-gui ARGS`. Returns an exit code only when it does not: --help, a mistake, or the
// window cannot open here (no memtap-gui, no display without --screenshot).
int monitor_command(const std::vector<std::string>& args);

// Why the window cannot open here ("" when it can): memtap-gui was not built or is not
// beside memtap, or there is no display and no offscreen screenshot was asked for.
std::string gui_unavailable_reason(bool offscreen);

}  // namespace memtap
