// See window_options.h.
#include "monitor/cli/window_options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "monitor/cli/command_line.h"
#include "monitor/cli/run_options.h"
#include "monitor/live/live_support.h"
#include "monitor/model/mem_event.h"

namespace memtap {

namespace {

bool parse_window_size(const std::string& text, int* w, int* h) {
  const size_t x = text.find('x');
  if (x == std::string::npos || text.empty() || !isdigit(static_cast<unsigned char>(text[0]))) {
    return false;
  }
  char* end = nullptr;
  const long width = strtol(text.c_str(), &end, 10);
  if (end != text.c_str() + x) return false;
  const long height = strtol(text.c_str() + x + 1, &end, 10);
  if (*end != '\0' || width < 320 || height < 240 || width > 16384 || height > 16384) return false;
  *w = int(width);
  *h = int(height);
  return true;
}

std::string view_list() {
  std::string list;
  for (const std::string& n : window_view_names()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

// `memtap monitor`: a recording, or a live session on an endpoint.
int parse_monitor(const std::vector<std::string>& args, WindowCommand* c) {
  CLI::App app;
  describe_command(&app, "monitor",
                   "memtap monitor FILE [window options]\n"
                   "       memtap monitor --listen ENDPOINT [options] [window options]",
                   "The window: open a recording (any file report reads: memtap's, msMemScope's "
                   ".db or .csv, CANN's operator_memory / memory_record .csv), or watch every "
                   "process that streams to ENDPOINT live while recording it; closing the window "
                   "ends that recording. --screenshot renders offscreen (no display needed), "
                   "writes the PNG and exits.");
  app.add_option("FILE", c->file, "the recording to open")->type_name("");
  app.add_option("-l,--listen", c->listen,
                 "watch every process that streams to ENDPOINT (ipc://PATH, tcp://HOST:PORT) "
                 "live, recording it to -o")
      ->type_name("ENDPOINT");
  app.add_option("-o", c->out,
                 "with --listen: the recording (default: ./memscope_dump_<YYYYmmddHHMMSS>.db)")
      ->type_name("OUT.db");
  app.add_flag("--compact", c->compact, "with --listen: integer rows, as for record");
  app.add_option("--keys", c->security.keys_dir,
                 "with --listen: accept only agents with a key of DIR (memtap keygen), over "
                 "CURVE; needed for tcp:// beyond loopback, unless --insecure")
      ->type_name("DIR");
  app.add_flag("--insecure", c->security.insecure,
               "with --listen: accept unauthenticated agents beyond loopback");
  add_checked_option(
      &app, "--max-processes", "N",
      [c](const std::string& v, std::string* error) {
        return parse_max_processes(v, &c->limits.max_processes, error);
      },
      "with --listen: how many processes may be recorded at once (4096); further ones are "
      "refused and counted");
  add_window_options(&app, &c->window, /*with_at=*/true);
  if (const int code = parse_command_line(&app, args); code >= 0) return code;

  c->mode = c->listen.empty() ? WindowMode::kReplay : WindowMode::kListen;
  if (c->mode == WindowMode::kListen && !c->file.empty()) {
    return usage_error("monitor", "either a recording to open or --listen, not both");
  }
  if (c->mode == WindowMode::kReplay) {
    for (const char* name : {"-o", "--compact", "--keys", "--insecure", "--max-processes"}) {
      if (app.count(name) != 0) {
        return usage_error(
            "monitor", std::string(name) + " goes with --listen (a recording is opened as it is)");
      }
    }
    if (c->file.empty()) {
      return usage_error("monitor",
                         "no recording given (memtap monitor FILE, or memtap monitor --listen "
                         "ENDPOINT)");
    }
  }
  return -1;
}

// `memtap run --gui`, as memtap hands it over: run's options and the window's, the program.
int parse_run(const std::vector<std::string>& args, WindowCommand* c) {
  c->mode = WindowMode::kRun;
  CLI::App app;
  declare_run_command(&app, &c->run);
  add_window_options(&app, &c->window, /*with_at=*/false);
  if (const int code = parse_command_line(&app, args, &c->run.command); code >= 0) return code;
  if (const std::string problem = run_options_problem(app, c->run, /*gui=*/true);
      !problem.empty()) {
    return usage_error("run", problem);
  }
  return -1;
}

}  // namespace

const std::vector<std::string>& window_view_names() {
  static const std::vector<std::string> names = {"curves", "lifetime", "pool",   "breakdown",
                                                 "flame",  "blocks",   "events", "findings"};
  return names;
}

bool display_available() {
  for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
    const char* value = getenv(v);
    if (value != nullptr && *value != '\0') return true;
  }
  return false;
}

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

bool parse_time_range(const std::string& text, int64_t* from_ns, int64_t* to_ns) {
  const size_t dots = text.find("..");
  if (dots == std::string::npos) return false;
  int64_t from = 0, to = 0;
  if (!parse_duration(text.substr(0, dots), &from) || !parse_duration(text.substr(dots + 2), &to) ||
      from >= to) {
    return false;
  }
  *from_ns = from;
  *to_ns = to;
  return true;
}

void add_window_options(CLI::App* app, WindowOptions* o, bool with_at,
                        const std::function<void(const std::string&)>& seen) {
  // Each option checks its value and says it was given.
  const auto option = [app, seen](const std::string& name, const std::string& value_name,
                                  std::function<bool(const std::string&, std::string*)> take,
                                  const std::string& help) {
    add_checked_option(
        app, name, value_name,
        [name, seen, take = std::move(take)](const std::string& v, std::string* error) {
          if (!take(v, error)) return false;
          if (seen) seen(name);
          return true;
        },
        help);
  };
  option(
      "--screenshot", "PNG",
      [o](const std::string& v, std::string*) {
        o->screenshot = v;
        return true;
      },
      "render offscreen (no display needed) and write the picture: a recording once it is loaded "
      "and drawn, then exit; a live run --screenshot-after into it, then the run goes on to its "
      "end");
  option(
      "--screenshot-after", "DURATION",
      [o](const std::string& v, std::string* error) {
        int64_t ns = 0;
        if (!parse_duration(v, &ns)) {
          *error = "--screenshot-after '" + v + "': expected a duration (3s, 1500ms)";
          return false;
        }
        o->screenshot_after_ms = ns / 1000000;
        return true;
      },
      "3s (the default), 1500ms");
  option(
      "--size", "WxH",
      [o](const std::string& v, std::string* error) {
        if (!parse_window_size(v, &o->width, &o->height)) {
          *error = "--size '" + v + "': expected WIDTHxHEIGHT, e.g. 1600x1000 (at least 320x240)";
          return false;
        }
        return true;
      },
      "the window's size (default 1600x1000)");
  option(
      "--view", "NAME",
      [o](const std::string& v, std::string* error) {
        const auto& names = window_view_names();
        if (std::find(names.begin(), names.end(), v) == names.end()) {
          *error = "--view '" + v + "': expected one of " + view_list();
          return false;
        }
        o->view = v;
        return true;
      },
      "the view in front: " + view_list());
  option(
      "--device", "cpu|N",
      [o](const std::string& v, std::string* error) {
        int32_t device = kNoDevice;
        if (!parse_device_option(v, &device)) {
          *error = "--device '" + v + "': " + kDeviceOptionExpected;
          return false;
        }
        o->device_given = true;
        o->device = device;
        return true;
      },
      "the device shown: the host's memory or device N (the first process that has it)");
  if (with_at) {
    option(
        "--at", "TIME",
        [o](const std::string& v, std::string* error) {
          if (v == "peak") {
            o->at_peak = true;
            return true;
          }
          if (!parse_duration(v, &o->at_ns) || o->at_ns < 0) {
            *error = "--at '" + v + "': expected a time since the start (12.5s, 1500ms) or peak";
            return false;
          }
          return true;
        },
        "the instant the pool and breakdown show: seconds since the start (12.5s) or peak");
    option(
        "--range", "FROM..TO",
        [o](const std::string& v, std::string* error) {
          if (!parse_time_range(v, &o->range_from_ns, &o->range_to_ns)) {
            *error = "--range '" + v +
                     "': expected two times since the start, the first the earlier "
                     "(1.5s..2s, 200ms..450ms)";
            return false;
          }
          return true;
        },
        "the range every view shows, since the start (1.5s..2s); the whole session when "
        "not given");
  }
  app->add_flag_callback(
      "--stats",
      [o, seen] {
        o->stats = true;
        if (seen) seen("--stats");
      },
      "at exit, print redraws per second and the frame-time histogram");
}

int parse_window_command(const std::vector<std::string>& args, WindowCommand* out) {
  if (!args.empty() && args[0] == "--run") {
    return parse_run(std::vector<std::string>(args.begin() + 1, args.end()), out);
  }
  return parse_monitor(args, out);
}

}  // namespace memtap
