// `memtap diff BASE NEW [--json] [--top N] [report options]`: two recordings (any format
// report reads) analysed as `memtap report` analyses them, and what differs between them
// printed, largest change first (report_diff.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/report/report_diff.h"
#include "monitor/report/report_diff_render.h"

namespace memtap {

namespace {

// Entries the analyses list per breakdown for a diff: far more than are shown, so that a
// key that moved up from below the top few is paired with its earlier value rather than
// taken for new.
constexpr size_t kDiffListed = 200;

}  // namespace

int diff_command(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  ReportOptions options;
  DiffOptions diff;
  std::string error;
  CLI::App app;
  describe_command(&app, "diff", "memtap diff [options] BASE NEW",
                   "Compare two runs (any files report reads), processes paired by rank or start "
                   "order: what differs, largest change first (peak and who held it, live at the "
                   "end, leaks per step, steps, fragmentation, time to OOM).");
  app.add_option("BASE NEW", paths, "the run to compare with, and the run compared")->type_name("");
  add_checked_option(
      &app, "--top", "N",
      [&diff](const std::string& v, std::string* error) {
        // The diff's own: entries shown per list (the analyses list more, kDiffListed).
        if (parse_count(v, &diff.top)) return true;
        *error = "--top needs a count above 0, got '" + v + "'";
        return false;
      },
      "entries per list (10)");
  add_report_options(&app, &options, /*with_top=*/false);
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  if (paths.size() != 2) {
    return usage_error("diff",
                       "expected two recordings (BASE NEW), got " + std::to_string(paths.size()));
  }
  diff.listed = std::max(diff.top, kDiffListed);
  options.analysis.top_entries = diff.listed;
  Report base, now;
  for (auto [path, report] : {std::make_pair(&paths[0], &base), std::make_pair(&paths[1], &now)}) {
    if (!analyse_recording(*path, options, "memtap diff", report, &error)) {
      fprintf(stderr, "memtap diff: %s\n", error.c_str());
      return 1;
    }
  }
  const ReportDiff d = diff_reports(base, now, diff);
  if (options.json) {
    printf("%s\n", diff_json(d).c_str());
  } else {
    diff_text(d, stdout);
  }
  return 0;
}

}  // namespace memtap
