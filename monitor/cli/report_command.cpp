// `memtap report [--json] [options] FILE`: a recording (memtap's, msMemScope's DB or CSV,
// CANN CSVs) read and analysed, the report printed on stdout.
#include <cstdio>
#include <cstdlib>
#include <string>

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
  if (end == text.c_str() || *end != 0 || ms < 0) return false;
  *out_ns = int64_t(ms * 1e6);
  return true;
}

}  // namespace

bool parse_report_option(const std::vector<std::string>& args, size_t* i, ReportOptions* report,
                         std::string* error) {
  const std::string& a = args[*i];
  if (a == "--json") {
    report->json = true;
    return true;
  }
  if (a == "--low-memory") {
    report->low_memory = true;
    return true;
  }
  AnalyzerOptions* options = &report->analysis;
  auto next = [&](std::string* value) {
    if (*i + 1 >= args.size()) {
      *error = a + " needs a value";
      return false;
    }
    *value = args[++*i];
    return true;
  };
  std::string v;
  if (a == "--top") {
    if (!next(&v)) return false;
    options->top_entries = size_t(strtoul(v.c_str(), nullptr, 10));
    return true;
  }
  int64_t* target = a == "--lazy-used-ms"      ? &options->lazy_used_ns
                    : a == "--delayed-free-ms" ? &options->delayed_free_ns
                    : a == "--long-idle-ms"    ? &options->long_idle_ns
                                               : nullptr;
  if (target) {
    if (!next(&v)) return false;
    if (!parse_ms(v, target)) {
      *error = a + ": expected milliseconds, got '" + v + "'";
      return false;
    }
    return true;
  }
  if (a == "--capacity-mb") {
    if (!next(&v)) return false;
    options->capacity_bytes = int64_t(strtod(v.c_str(), nullptr) * 1048576);
    return true;
  }
  *error = "unknown option '" + a + "'";
  return false;
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
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].empty() && args[i][0] == '-') {
      if (!parse_report_option(args, &i, &options, &error)) {
        fprintf(stderr, "memtap report: %s\n", error.c_str());
        return 2;
      }
    } else if (path.empty()) {
      path = args[i];
    } else {
      fprintf(stderr, "memtap report: one recording at a time (got '%s' and '%s')\n", path.c_str(),
              args[i].c_str());
      return 2;
    }
  }
  if (path.empty()) {
    fprintf(stderr, "memtap report: no recording given (memtap report [--json] FILE)\n");
    return 2;
  }
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
