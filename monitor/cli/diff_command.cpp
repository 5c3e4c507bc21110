// `memtap diff BASE NEW [--json] [--top N] [report options]`: two recordings (any format
// report reads) analysed as `memtap report` analyses them, and what differs between them
// printed, largest change first (report_diff.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "monitor/cli/commands.h"
#include "monitor/report/report_diff.h"
#include "monitor/report/report_diff_render.h"

namespace memtap {

namespace {

constexpr const char* kUsage = "memtap diff BASE NEW [--json] [--top N] [report options]";

// Entries the analyses list per breakdown for a diff: far more than are shown, so that a
// key that moved up from below the top few is paired with its earlier value rather than
// taken for new.
constexpr size_t kDiffListed = 200;

bool parse_count(const std::string& text, size_t* out) {
  char* end = nullptr;
  const unsigned long long v = strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != 0 || v == 0) return false;
  *out = size_t(v);
  return true;
}

}  // namespace

int diff_command(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  ReportOptions options;
  DiffOptions diff;
  std::string error;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--top") {
      // The diff's own: entries shown per list (the analyses list more, kDiffListed).
      if (i + 1 >= args.size() || !parse_count(args[i + 1], &diff.top)) {
        fprintf(stderr, "memtap diff: --top needs a count above 0 (%s)\n", kUsage);
        return 2;
      }
      ++i;
    } else if (a.size() > 1 && a[0] == '-') {
      if (!parse_report_option(args, &i, &options, &error)) {
        fprintf(stderr, "memtap diff: %s (%s)\n", error.c_str(), kUsage);
        return 2;
      }
    } else {
      paths.push_back(a);
    }
  }
  if (paths.size() != 2) {
    fprintf(stderr, "memtap diff: expected two recordings, got %zu (%s)\n", paths.size(), kUsage);
    return 2;
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
