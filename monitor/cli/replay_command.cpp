// `memtap replay FILE [--speed max|1x|10x|<factor>x] [--json]`: feeds a recording through
// the engine as if it were live, paced by its own timestamps, printing progress once a
// second of wall time, then the report. The GUI will attach to this same loop.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/reading_progress.h"
#include "monitor/engine/analyzer.h"
#include "monitor/engine/saturating.h"
#include "monitor/report/units.h"
#include "monitor/store/reader/recording_feed.h"
#include "monitor/store/reader/recording_reader.h"

namespace memtap {

namespace {

// "max" (0: no pacing) or "<factor>x" (1x: real time).
bool parse_speed(const std::string& text, double* factor) {
  if (text == "max") {
    *factor = 0;
    return true;
  }
  if (text.size() < 2 || text.back() != 'x') return false;
  char* end = nullptr;
  *factor = strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() - 1 && *factor > 0 && std::isfinite(*factor);
}

}  // namespace

int replay_command(const std::vector<std::string>& args) {
  double speed = 0;
  std::string path, error;
  ReportOptions options;
  std::vector<std::string> files;
  CLI::App app;
  describe_command(&app, "replay", "memtap replay [options] FILE",
                   "Feed a recording (any file report reads) through the engine as if it were "
                   "live, paced by its own timestamps, with progress once a second, then print "
                   "the report.");
  app.add_option("FILE", files, "the recording")->type_name("");
  add_checked_option(
      &app, "--speed", "SPEED",
      [&speed](const std::string& v, std::string* error) {
        if (parse_speed(v, &speed)) return true;
        *error = "--speed: expected max, 1x, 10x or <factor>x, got '" + v + "'";
        return false;
      },
      "max (no pacing, the default), 1x (real time), 10x or any <factor>x");
  add_report_options(&app, &options);
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  if (files.size() > 1) return usage_error("replay", "one recording at a time");
  if (files.empty()) return usage_error("replay", "no recording given");
  path = files[0];
  install_stop_signals();
  const FeedPlan plan = plan_feed(path, options.low_memory);
  if (!plan.why.empty()) fprintf(stderr, "memtap replay: %s: %s\n", path.c_str(), plan.why.c_str());

  using Clock = std::chrono::steady_clock;
  Recording rec;
  Analyzer analyzer(&rec.strings, options.analysis);
  size_t total = 0;  // known when the file is held, not when it streams
  size_t done = 0;
  int64_t first_ns = 0;
  Clock::time_point started;
  Clock::time_point next_progress;
  ReadingProgress progress;
  auto line = show_reading_progress(path, "replaying", &progress);
  // Everything due by now (in recording time) goes in at once: pacing per event would
  // spend the time in the clock, not the engine.
  auto pace = [&](const MemEvent* events, size_t n) {
    if (done == 0 && n > 0) {
      first_ns = events[0].ts_ns;
      started = Clock::now();
      next_progress = started + std::chrono::seconds(1);
    }
    size_t at = 0;
    while (at < n) {
      if (interrupted()) return false;
      size_t end = n;
      if (speed > 0) {
        double elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
        // A recording's times are anything int64 holds, and a factor may be huge.
        const int64_t due_ns = saturating_add(first_ns, int64_from_double(elapsed_s * speed * 1e9));
        end = at;
        while (end < n && events[end].ts_ns <= due_ns && end - at < 65536) ++end;
        if (end == at) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          continue;
        }
      }
      analyzer.add(events + at, end - at);
      progress.events_analysed.fetch_add(end - at, std::memory_order_relaxed);
      done += end - at;
      at = end;
      // On a terminal the progress line says as much, in place.
      if (!line && Clock::now() >= next_progress) {
        next_progress += std::chrono::seconds(1);
        const double at_s = double(events[at - 1].ts_ns - first_ns) / 1e9;
        if (total != 0) {
          fprintf(stderr, "memtap replay: %.1f s into the recording, %s of %s events\n", at_s,
                  count_text(done).c_str(), count_text(total).c_str());
        } else {
          fprintf(stderr, "memtap replay: %.1f s into the recording, %s events\n", at_s,
                  count_text(done).c_str());
        }
      }
    }
    return true;
  };
  // Paced in small batches so that a 1x replay feeds the engine as a live run would.
  const size_t batch = speed > 0 ? 65536 : kReportBatchEvents;
  const bool read = feed_recording(path, plan, batch, &rec, &total, pace, &error, &progress.read);
  line.reset();
  if (!read) {
    fprintf(stderr, "memtap replay: %s\n", error.c_str());
    return 1;
  }
  if (interrupted())
    fprintf(stderr, "memtap replay: stopped after %s events\n", count_text(done).c_str());
  print_recording_report(analyzer, rec, path, options.json);
  return 0;
}

}  // namespace memtap
