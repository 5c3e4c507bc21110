// `memtap report [--json] [options] FILE`: a recording (memtap's, msMemScope's DB or CSV,
// CANN CSVs) read and analysed, the report printed on stdout.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/reading_progress.h"
#include "monitor/engine/analyzer.h"
#include "monitor/report/report_render.h"
#include "monitor/store/reader/recording_feed.h"
#include "monitor/store/reader/recording_reader.h"

namespace memtap {

namespace {

bool parse_ms(const std::string& text, int64_t* out_ns) {
  char* end = nullptr;
  double ms = strtod(text.c_str(), &end);
  // Up to ~104 days, as window_options' durations: past int64's nanoseconds is a mistake.
  if (end == text.c_str() || *end != 0 || !(ms >= 0) || ms * 1e6 > 9e18) return false;
  *out_ns = int64_t(ms * 1e6);
  return true;
}

}  // namespace

void add_report_options(CLI::App* app, ReportOptions* report, bool with_top) {
  AnalyzerOptions* options = &report->analysis;
  app->add_flag("--json", report->json, "print the report as JSON");
  app->add_flag("--low-memory", report->low_memory,
                "read the recording in batches rather than whole (chosen by itself when the file "
                "would not fit in memory)");
  if (with_top) {
    add_checked_option(
        app, "--top", "N",
        [options](const std::string& v, std::string* error) {
          if (parse_count(v, &options->top_entries)) return true;
          *error = "--top: expected a number of entries above 0, got '" + v + "'";
          return false;
        },
        "entries per breakdown and list (10)");
  }
  const struct {
    const char* name;
    int64_t* target;
    const char* help;
  } durations[] = {
      {"--lazy-used-ms", &options->lazy_used_ns,
       "lazy_used: a block first used this long after its allocation (100)"},
      {"--delayed-free-ms", &options->delayed_free_ns,
       "delayed_free: a block freed this long after its last use (100)"},
      {"--long-idle-ms", &options->long_idle_ns,
       "long_idle: a block unused this long between uses (1000)"},
  };
  for (const auto& d : durations) {
    const std::string name = d.name;
    add_checked_option(
        app, name, "MS",
        [name, target = d.target](const std::string& v, std::string* error) {
          if (parse_ms(v, target)) return true;
          *error = name + ": expected milliseconds, got '" + v + "'";
          return false;
        },
        d.help);
  }
  add_checked_option(
      app, "--capacity-mb", "MB",
      [options](const std::string& v, std::string* error) {
        char* end = nullptr;
        const double mb = strtod(v.c_str(), &end);
        // Below 8 EiB: int64 holds the bytes.
        if (end == v.c_str() || *end != 0 || !(mb > 0) || mb * 1048576 > 9e18) {
          *error = "--capacity-mb: expected megabytes, got '" + v + "'";
          return false;
        }
        options->capacity_bytes = int64_t(mb * 1048576);
        return true;
      },
      "the memory of every device (the host too), for the time to OOM, in place of what the "
      "recording says (when it says nothing, or wrong)");
}

Report recording_report(const Analyzer& analyzer, const Recording& rec, const std::string& path) {
  Report report = analyzer.report(rec.processes);
  report.source = path;
  report.format = rec.format;
  report.unfinished = rec.unfinished;
  report.stopped = rec.stopped;
  report.rows_skipped = rec.rows_skipped;
  report.live_input = rec.live_input;
  report.torch_snapshot = rec.torch_snapshot;
  return report;
}

void print_recording_report(const Analyzer& analyzer, const Recording& rec, const std::string& path,
                            bool json) {
  const Report report = recording_report(analyzer, rec, path);
  if (json) {
    printf("%s\n", report_json(report).c_str());
  } else {
    report_text(report, stdout);
  }
}

bool analyse_recording(const std::string& path, const ReportOptions& options, const char* command,
                       Report* out, std::string* error) {
  const FeedPlan plan = plan_feed(path, options.low_memory);
  if (!plan.why.empty()) fprintf(stderr, "%s: %s: %s\n", command, path.c_str(), plan.why.c_str());
  Recording rec;
  Analyzer analyzer(&rec.strings, options.analysis);
  size_t total = 0;
  ReadingProgress progress;
  const auto line = show_reading_progress(path, "analysing", &progress);
  const bool read = feed_recording(
      path, plan, kReportBatchEvents, &rec, &total,
      [&](const MemEvent* events, size_t count) {
        analyzer.add(events, count);
        progress.events_analysed.fetch_add(count, std::memory_order_relaxed);
        return true;
      },
      error, &progress.read);
  if (!read) return false;
  *out = recording_report(analyzer, rec, path);
  return true;
}

int report_command(const std::vector<std::string>& args) {
  std::string path, error;
  ReportOptions options;
  std::vector<std::string> files;
  CLI::App app;
  describe_command(&app, "report", "memtap report [options] FILE",
                   "Analyse a recording (memtap's, msMemScope's .db or .csv, CANN "
                   "operator_memory/memory_record .csv) and print the report.");
  app.add_option("FILE", files, "the recording")->type_name("");
  add_report_options(&app, &options);
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  if (files.size() > 1) {
    return usage_error("report",
                       "one recording at a time (got '" + files[0] + "' and '" + files[1] + "')");
  }
  if (files.empty()) return usage_error("report", "no recording given");
  path = files[0];
  Report report;
  if (!analyse_recording(path, options, "memtap report", &report, &error)) {
    fprintf(stderr, "memtap report: %s\n", error.c_str());
    return 1;
  }
  if (options.json) {
    printf("%s\n", report_json(report).c_str());
  } else {
    report_text(report, stdout);
  }
  return 0;
}

}  // namespace memtap
