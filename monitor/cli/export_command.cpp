// `memtap export FILE [--format F] [--pid PID] [-o OUT]`: any file memtap reads, in a format
// other tools read (store/export/recording_export.h). The default, msmemscope-db, is
// msMemScope's own table, for MindStudio Insight and msMemScope's analyzer (a --compact
// recording's memscope_dump is a view, which they refuse).
#include <cstdio>
#include <string>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/export_messages.h"
#include "monitor/cli/file_and_output.h"
#include "monitor/cli/reading_progress.h"

namespace memtap {
namespace {

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
  ExportFormat format = ExportFormat::kMsmemscopeDb;
  ExportOptions options;
  std::string in, out;
  CLI::App app;
  describe_command(&app, "export", "memtap export [options] FILE",
                   "Write any file report reads in a format other tools read.");
  add_file_and_output(
      &app, &in, &out, "the recording",
      "where to write (default: ./memscope_dump_<YYYYmmddHHMMSS>.db or .csv, "
      "./operator_memory_<time>.csv, ./memory_record_<time>.csv, ./snapshot_<time>.pickle)");
  add_checked_option(
      &app, "--format", "F",
      [&format](const std::string& v, std::string* error) {
        const std::optional<ExportFormat> parsed = parse_export_format(v);
        if (!parsed) {
          *error = "unknown --format '" + v + "' (expected one of: " + export_format_names() + ")";
          return false;
        }
        format = *parsed;
        return true;
      },
      "msmemscope-db (the default): msMemScope's own memscope_dump table, which MindStudio "
      "Insight opens (a memtap recording, --compact too, is copied); msmemscope-csv: msMemScope's "
      "CSV export; operator-memory, memory-record: torch_npu's operator_memory.csv (a block per "
      "row) and memory_record.csv (the totals over time), one process each; torch-snapshot: a "
      "PyTorch memory snapshot of one process's GPU memory, for https://pytorch.org/memory_viz");
  add_checked_option(
      &app, "--pid", "PID",
      [&options](const std::string& v, std::string* error) {
        uint32_t pid = 0;
        if (!parse_pid(v, &pid)) {
          *error = "--pid: expected a process id, got '" + v + "'";
          return false;
        }
        options.pid = pid;
        return true;
      },
      "the process, for operator-memory, memory-record and torch-snapshot when the recording has "
      "several");
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  if (in.empty()) return usage_error("export", "no recording given");
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
