// `memtap replay FILE [--speed max|1x|10x|<factor>x] [--json]`: feeds a recording through
// the engine as if it were live, paced by its own timestamps, printing progress once a
// second of wall time, then the report. The GUI will attach to this same loop.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "monitor/cli/commands.h"
#include "monitor/engine/analyzer.h"
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
  return end == text.c_str() + text.size() - 1 && *factor > 0;
}

}  // namespace

int replay_command(const std::vector<std::string>& args) {
  bool json = false;
  double speed = 0;
  std::string path, error;
  AnalyzerOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--speed" && i + 1 < args.size()) {
      if (!parse_speed(args[++i], &speed)) {
        fprintf(stderr, "memtap replay: --speed: expected max, 1x, 10x or <factor>x, got '%s'\n",
                args[i].c_str());
        return 2;
      }
    } else if (!args[i].empty() && args[i][0] == '-') {
      if (!parse_analysis_option(args, &i, &options, &error)) {
        fprintf(stderr, "memtap replay: %s\n", error.c_str());
        return 2;
      }
    } else if (path.empty()) {
      path = args[i];
    } else {
      fprintf(stderr, "memtap replay: one recording at a time\n");
      return 2;
    }
  }
  if (path.empty()) {
    fprintf(stderr,
            "memtap replay: no recording given (memtap replay FILE [--speed max|1x|10x])\n");
    return 2;
  }
  install_stop_signals();
  Recording rec;
  if (!read_recording(path, &rec, &error)) {
    fprintf(stderr, "memtap replay: %s\n", error.c_str());
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  Analyzer analyzer(&rec.strings, options);
  const size_t n = rec.events.size();
  const int64_t first_ns = n ? rec.events.front().ts_ns : 0;
  const int64_t last_ns = n ? rec.events.back().ts_ns : 0;
  const auto started = Clock::now();
  auto next_progress = started + std::chrono::seconds(1);
  size_t done = 0;
  while (done < n && !interrupted()) {
    // Everything due by now (in recording time) goes in at once: pacing per event would
    // spend the time in the clock, not the engine.
    size_t end = n;
    if (speed > 0) {
      double elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
      int64_t due_ns = first_ns + int64_t(elapsed_s * speed * 1e9);
      end = done;
      while (end < n && rec.events[end].ts_ns <= due_ns && end - done < 65536) ++end;
      if (end == done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
    } else {
      end = std::min(n, done + 65536);
    }
    analyzer.add(rec.events.data() + done, end - done);
    done = end;
    if (Clock::now() >= next_progress) {
      next_progress += std::chrono::seconds(1);
      fprintf(stderr, "memtap replay: %.1f s of %.1f s, %zu of %zu events\n",
              double(rec.events[done - 1].ts_ns - first_ns) / 1e9, double(last_ns - first_ns) / 1e9,
              done, n);
    }
  }
  if (done < n) fprintf(stderr, "memtap replay: stopped after %zu of %zu events\n", done, n);
  print_recording_report(analyzer, rec, path, json);
  return 0;
}

}  // namespace memtap
