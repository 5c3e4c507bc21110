// The window's command line, declared once for the three that read it: memtap checks
// `memtap monitor ARGS` and `memtap run --gui ARGS` with it, then execs memtap-gui, which
// parses the same arguments into what it shows (`memtap-gui ARGS`, `memtap-gui --run ARGS`).
// So a mistake is said by memtap before any window starts, and help, checks and wording are
// those of every other command (command_line.h).
//
//   memtap monitor FILE [window options]                      open a recording
//   memtap monitor --listen ENDPOINT [--keys DIR | --insecure] [-o OUT.db] [--compact]
//                  [--max-processes N] [window options]      record and watch live
//   memtap run --gui [run options] [window options] -- PROGRAM [ARGS...]
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "monitor/engine/session.h"
#include "monitor/live/program_run.h"
#include "monitor/transport/pull_socket.h"

namespace CLI {
class App;
}  // namespace CLI

namespace memtap {

// What the window shows and how (the same for a recording and a live session).
struct WindowOptions {
  std::string screenshot;              // --screenshot PNG: render offscreen, write the picture
  int64_t screenshot_after_ms = 3000;  // live: how far into the run the picture is taken
  int width = 1600;                    // --size WxH
  int height = 1000;
  std::string view = "curves";  // --view: the view in front
  bool device_given = false;    // --device: kHostDevice ("cpu", "host") or a device number
  int32_t device = 0;
  bool at_peak = false;  // --at peak
  int64_t at_ns = -1;    // --at TIME since the start; -1: not given
  // --range FROM..TO: the range every view shows, since the start; -1: not given.
  int64_t range_from_ns = -1;
  int64_t range_to_ns = -1;
  bool stats = false;  // --stats: the frame-time histogram at exit
};

// The views --view names, in the window's order.
const std::vector<std::string>& window_view_names();

// Whether a window can be shown: DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM is set (the last
// for offscreen rendering). memtap asks before it execs the window, the window at its start.
bool display_available();

// "3s", "3.5s", "1500ms", "2" (seconds), "1min" -> nanoseconds; false if not a duration.
bool parse_duration(const std::string& text, int64_t* ns);
// "1.5s..2s" -> [from, to] in nanoseconds; false unless both are durations and from < to.
bool parse_time_range(const std::string& text, int64_t* from_ns, int64_t* to_ns);

// Declares the window's options on `app` into *o: --screenshot, --screenshot-after, --size,
// --view, --device, --stats, and --at and --range where `with_at` (a recording's instant
// and span; a live run has none yet). `seen`, when given, is told the name of each option given.
void add_window_options(CLI::App* app, WindowOptions* o, bool with_at,
                        const std::function<void(const std::string&)>& seen = {});

enum class WindowMode { kReplay, kListen, kRun };

// The whole of what memtap-gui is asked to do.
struct WindowCommand {
  WindowMode mode = WindowMode::kReplay;
  std::string file;         // kReplay: the recording
  std::string listen;       // kListen: --listen ENDPOINT
  std::string out;          // kListen: -o
  bool compact = false;     // kListen: --compact
  ListenSecurity security;  // kListen: --keys, --insecure
  SessionLimits limits;     // kListen: --max-processes
  RunOptions run;           // kRun: run's options and the program
  WindowOptions window;
};

// `memtap monitor`'s arguments, or "--run" followed by `memtap run`'s without its --gui.
// Returns -1 when the window goes on, 0 when --help printed the usage (stdout), 2 when the
// arguments are wrong: said as every command says it ("memtap monitor: ..." or
// "memtap run: ...", then "see memtap CMD --help", on stderr).
int parse_window_command(const std::vector<std::string>& args, WindowCommand* out);

}  // namespace memtap
