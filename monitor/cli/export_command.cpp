// `memtap export FILE [--format F] [--pid PID] [-o OUT]`: any file memtap reads, in a format
// other tools read (store/export/recording_export.h). The default, msmemscope-db, is
// msMemScope's own table, for MindStudio Insight and msMemScope's analyzer (a --compact
// recording's memscope_dump is a view, which they refuse).
#include <cstdio>
#include <string>

#include "monitor/cli/commands.h"
#include "monitor/cli/export_messages.h"
#include "monitor/cli/file_and_output.h"
#include "monitor/cli/reading_progress.h"

namespace memtap {
namespace {

constexpr const char* kUsage = "memtap export FILE [--format F] [--pid PID] [-o OUT]";

// A process id: digits only, at most 32 bits.
bool parse_pid(const std::string& text, uint32_t* pid) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const unsigned long long value = std::stoull(text);
  if (value > 0xffffffffull) return false;
  *pid = uint32_t(value);
  return true;
}

}  // namespace

int export_command(const std::vector<std::string>& args) {
  // --format and --pid here; FILE and -o as every command that turns a file into another.
  std::vector<std::string> rest;
  ExportFormat format = ExportFormat::kMsmemscopeDb;
  ExportOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a != "--format" && a != "--pid") {
      rest.push_back(a);
      continue;
    }
    if (i + 1 == args.size()) {
      fprintf(stderr, "memtap export: %s needs a value (%s)\n", a.c_str(), kUsage);
      return 2;
    }
    const std::string& value = args[++i];
    if (a == "--format") {
      const std::optional<ExportFormat> parsed = parse_export_format(value);
      if (!parsed) {
        fprintf(stderr, "memtap export: unknown --format '%s' (expected one of: %s)\n",
                value.c_str(), export_format_names());
        return 2;
      }
      format = *parsed;
    } else {
      uint32_t pid = 0;
      if (!parse_pid(value, &pid)) {
        fprintf(stderr, "memtap export: --pid: expected a process id, got '%s'\n", value.c_str());
        return 2;
      }
      options.pid = pid;
    }
  }
  std::string in, out, bad;
  if (!parse_file_and_output(rest, &in, &out, &bad)) {
    fprintf(stderr, "memtap export: unexpected argument '%s' (%s)\n", bad.c_str(), kUsage);
    return 2;
  }
  if (in.empty()) {
    fprintf(stderr, "memtap export: no recording given (%s)\n", kUsage);
    return 2;
  }
  if (out.empty()) out = default_export_path(format);
  ExportSummary summary;
  std::string error;
  ReadingProgress progress;
  options.progress = &progress.read;
  auto line = show_reading_progress(in, "exporting", &progress);
  const bool exported = export_recording(in, format, out, options, &summary, &error);
  line.reset();
  if (!exported) {
    fprintf(stderr, "memtap export: %s\n", error.c_str());
    return 1;
  }
  print_export_written("memtap export", out, format, summary);
  return 0;
}

}  // namespace memtap
