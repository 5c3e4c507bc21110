// See gui_options.h.
#include "monitor/gui/gui_options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "monitor/live/live_support.h"
#include "monitor/model/mem_event.h"

namespace memtap::gui {

namespace {

bool parse_size(const std::string& text, int* w, int* h) {
  const size_t x = text.find('x');
  if (x == std::string::npos) return false;
  char* end = nullptr;
  const long width = strtol(text.c_str(), &end, 10);
  if (end != text.c_str() + x) return false;
  const long height = strtol(text.c_str() + x + 1, &end, 10);
  if (*end != '\0' || width < 320 || height < 240 || width > 16384 || height > 16384) return false;
  *w = int(width);
  *h = int(height);
  return true;
}

// The window's own options, wherever they stand; returns the arguments taken (0: not one).
size_t window_option(const std::vector<std::string>& args, size_t i, GuiOptions* o,
                     std::string* error) {
  const std::string& a = args[i];
  if (a == "--stats") {
    o->stats = true;
    return 1;
  }
  if (a == "--help" || a == "-h") {
    o->help = true;
    return 1;
  }
  const bool takes_value = a == "--screenshot" || a == "--screenshot-after" || a == "--size" ||
                           a == "--view" || a == "--at" || a == "--device";
  if (!takes_value) return 0;
  if (i + 1 >= args.size()) {
    *error = a + " needs a value";
    return 0;
  }
  const std::string& v = args[i + 1];
  if (a == "--screenshot") {
    o->screenshot = v;
  } else if (a == "--screenshot-after") {
    int64_t ns = 0;
    if (!parse_duration(v, &ns)) {
      *error = "--screenshot-after '" + v + "': expected a duration (3s, 1500ms)";
      return 0;
    }
    o->screenshot_after_ms = ns / 1000000;
  } else if (a == "--size") {
    if (!parse_size(v, &o->width, &o->height)) {
      *error = "--size '" + v + "': expected WIDTHxHEIGHT, e.g. 1600x1000 (at least 320x240)";
      return 0;
    }
  } else if (a == "--view") {
    const auto& names = view_names();
    if (std::find(names.begin(), names.end(), v) == names.end()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      *error = "--view '" + v + "': expected one of " + list;
      return 0;
    }
    o->view = v;
  } else if (a == "--device") {
    char* end = nullptr;
    const long n = v == "cpu" ? kHostDevice : strtol(v.c_str(), &end, 10);
    if (v != "cpu" &&
        (v.empty() || !isdigit(static_cast<unsigned char>(v[0])) || *end != 0 || n > 65535)) {
      *error = "--device '" + v + "': expected cpu or a GPU number (0, 1, ...)";
      return 0;
    }
    o->device_given = true;
    o->device = int32_t(n);
  } else if (a == "--at") {
    if (v == "peak") {
      o->at_peak = true;
    } else if (!parse_duration(v, &o->at_ns) || o->at_ns < 0) {
      *error = "--at '" + v + "': expected a time since the start (12.5s, 1500ms) or peak";
      return 0;
    }
  }
  return 2;
}

}  // namespace

bool parse_duration(const std::string& text, int64_t* ns) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double value = strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(value) || value < 0) return false;
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1e9;
  if (unit == "ms") scale = 1e6;
  if (unit == "us") scale = 1e3;
  if (unit == "min") scale = 60e9;
  if (unit == "h") scale = 3600e9;
  if (scale == 0 || value * scale > 9e18) return false;
  *ns = int64_t(value * scale);
  return true;
}

bool parse_gui_options(const std::vector<std::string>& args, GuiOptions* o, std::string* error) {
  error->clear();
  if (!args.empty() && args[0] == "--run") {
    o->mode = Mode::kRun;
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (!parse_run_options(rest, &o->run, error,
                           [o](const std::vector<std::string>& a, size_t i, std::string* e) {
                             return window_option(a, i, o, e);
                           })) {
      return o->help && error->find("no program") != std::string::npos;
    }
    if (!o->run.connect.empty()) {
      *error = "--connect streams elsewhere; the window records here (leave --connect out)";
      return false;
    }
    return true;
  }
  bool max_processes_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const size_t taken = window_option(args, i, o, error);
    if (!error->empty()) return false;
    if (taken != 0) {
      i += taken - 1;
      continue;
    }
    if ((a == "--listen" || a == "-l") && i + 1 < args.size()) {
      o->mode = Mode::kListen;
      o->listen = args[++i];
    } else if (a == "-o" && i + 1 < args.size()) {
      o->out = args[++i];
    } else if (a == "--compact") {
      o->compact = true;
    } else if (a == "--keys" && i + 1 < args.size()) {
      o->security.keys_dir = args[++i];
    } else if (a == "--insecure") {
      o->security.insecure = true;
    } else if (a == "--max-processes" && i + 1 < args.size()) {
      if (!parse_max_processes(args[++i], &o->limits.max_processes, error)) return false;
      max_processes_given = true;
    } else if (!a.empty() && a[0] == '-') {
      *error = "unknown option '" + a + "'" +
               (a == "--listen" || a == "-o" || a == "--keys" || a == "--max-processes"
                    ? " (it needs a value)"
                    : "");
      return false;
    } else if (o->file.empty()) {
      o->file = a;
    } else {
      *error = "one recording at a time ('" + o->file + "', then '" + a + "')";
      return false;
    }
  }
  if (o->help) return true;
  if (o->mode == Mode::kListen && !o->file.empty()) {
    *error = "either a recording to open or --listen, not both";
    return false;
  }
  if (o->mode == Mode::kReplay && (!o->out.empty() || o->compact || !o->security.keys_dir.empty() ||
                                   o->security.insecure || max_processes_given)) {
    *error =
        "-o, --compact, --keys, --insecure and --max-processes go with --listen (a recording is "
        "opened as it is)";
    return false;
  }
  if (o->mode == Mode::kReplay && o->file.empty()) {
    *error = "no recording given (memtap monitor FILE, or memtap monitor --listen ENDPOINT)";
    return false;
  }
  return true;
}

const char* gui_usage() {
  return "usage: memtap monitor FILE [window options]\n"
         "       memtap monitor --listen ENDPOINT [--keys DIR | --insecure] [-o out.db]\n"
         "                      [--compact] [--max-processes N] [window options]\n"
         "       memtap run --gui [run options] [window options] -- PROGRAM [ARGS...]\n"
         "\n"
         "  FILE            a recording: memtap's (text or --compact), msMemScope's .db or .csv,\n"
         "                  CANN operator_memory / memory_record .csv\n"
         "  --listen EP     watch every process that streams to EP (ipc://PATH, or\n"
         "                  tcp://127.0.0.1:PORT) live, recording it to -o (default\n"
         "                  ./memscope_dump_<time>.db); closing the window ends the recording\n"
         "  --keys DIR      accept only agents with a key of DIR (memtap keygen), over CURVE:\n"
         "                  needed for tcp:// beyond loopback, unless --insecure\n"
         "  --max-processes N  how many processes may be recorded at once (4096); further\n"
         "                  ones are refused and counted\n"
         "\n"
         "window options:\n"
         "  --screenshot PNG        render offscreen (no display needed), write the picture:\n"
         "                          a recording once it is loaded and drawn, then exit; a live\n"
         "                          run --screenshot-after into it (default 3s), then the run\n"
         "                          goes on to its end\n"
         "  --screenshot-after DUR  3s, 1500ms\n"
         "  --size WxH              the window's size (default 1600x1000)\n"
         "  --view NAME             the view in front: curves, lifetime, pool, breakdown,\n"
         "                          flame, blocks, events, findings\n"
         "  --at TIME               the instant the pool and breakdown show: seconds since\n"
         "                          the start (12.5s) or peak\n"
         "  --device cpu|N          the device shown: the host's memory or GPU N (the first\n"
         "                          process that has it)\n"
         "  --stats                 at exit, print redraws per second and the frame-time\n"
         "                          histogram\n";
}

}  // namespace memtap::gui
