// memtap-gui's command line (no Qt here, so it is tested on its own). memtap passes its
// arguments on: `memtap monitor ARGS` runs `memtap-gui ARGS`, `memtap run --gui ARGS` runs
// `memtap-gui --run ARGS`.
//
//   memtap-gui FILE [WINDOW OPTIONS]                         open a recording
//   memtap-gui --listen ENDPOINT [--keys DIR | --insecure] [-o OUT.db] [--compact]
//              [--max-processes N] [WINDOW OPTIONS]
//   memtap-gui --run [memtap run's options] [WINDOW OPTIONS] -- PROGRAM [ARGS...]
//
// WINDOW OPTIONS: --screenshot PNG (render offscreen, write the picture; a recording: once
// everything is loaded and drawn, then exit; live: --screenshot-after DURATION into the run,
// which goes on to its end), --size WxH (default 1600x1000), --view NAME (the view in front),
// --at TIME (the instant the pool and breakdown show: seconds since the start, "12.5s",
// "1500ms", or "peak"), --device cpu|N (the device shown), --stats (print the frame-time
// histogram at exit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/live/program_run.h"

namespace memtap::gui {

enum class Mode { kReplay, kListen, kRun };

// The views --view names, in the window's order.
inline const std::vector<std::string>& view_names() {
  static const std::vector<std::string> names = {"curves", "lifetime", "pool",   "breakdown",
                                                 "flame",  "blocks",   "events", "findings"};
  return names;
}

struct GuiOptions {
  Mode mode = Mode::kReplay;
  std::string file;         // kReplay
  std::string listen;       // kListen
  std::string out;          // kListen: -o
  bool compact = false;     // kListen: --compact
  ListenSecurity security;  // kListen: --keys, --insecure
  SessionLimits limits;     // kListen: --max-processes
  RunOptions run;           // kRun
  std::string screenshot;
  int64_t screenshot_after_ms = 3000;
  int width = 1600;
  int height = 1000;
  std::string view = "curves";
  bool device_given = false;  // --device: kHostDevice ("cpu") or a GPU ordinal
  int32_t device = 0;
  bool at_peak = false;
  int64_t at_ns = -1;  // since the start; -1: not given
  bool stats = false;
  bool help = false;
};

// False with *error (one line, without a "memtap-gui: " prefix) for anything it cannot use.
bool parse_gui_options(const std::vector<std::string>& args, GuiOptions* out, std::string* error);

// "3s", "3.5s", "1500ms", "2" (seconds), "1min" -> nanoseconds; false if not a duration.
bool parse_duration(const std::string& text, int64_t* ns);

const char* gui_usage();

}  // namespace memtap::gui
