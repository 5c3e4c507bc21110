// `memtap import FILE [-o OUT.db]`: a file that is not a recording database (a PyTorch
// memory snapshot, msMemScope's or the profiler's CSVs) made into one, in msMemScope's
// format, which report, replay and monitor then open like any recording: the msmemscope-db
// export of store/export/recording_export.h.
#include <cstdio>
#include <string>

#include "monitor/cli/command_line.h"
#include "monitor/cli/commands.h"
#include "monitor/cli/export_messages.h"
#include "monitor/cli/file_and_output.h"

namespace memtap {

int import_command(const std::vector<std::string>& args) {
  std::string in, out;
  CLI::App app;
  describe_command(&app, "import", "memtap import [-o OUT.db] FILE",
                   "Make a file that is no database (a PyTorch memory snapshot, msMemScope's or "
                   "the profiler's CSVs) a recording in msMemScope's format, for report, replay "
                   "and monitor.");
  add_file_and_output(&app, &in, &out, "the file to import",
                      "the recording to write (default: ./memscope_dump_<YYYYmmddHHMMSS>.db)");
  if (const int code = parse_command_line(&app, args); code >= 0) return code;
  if (in.empty()) return usage_error("import", "no file given");
  if (is_sqlite_database(in)) {
    fprintf(stderr,
            "memtap import: %s is a database already: `memtap export %s` copies it into "
            "msMemScope's table\n",
            in.c_str(), in.c_str());
    return 2;
  }
  if (out.empty()) out = default_export_path(ExportFormat::kMsmemscopeDb);
  ExportSummary summary;
  std::string error;
  if (!export_recording(in, ExportFormat::kMsmemscopeDb, out, ExportOptions{}, &summary, &error)) {
    fprintf(stderr, "memtap import: %s\n", error.c_str());
    return 1;
  }
  print_export_written("memtap import", out, ExportFormat::kMsmemscopeDb, summary);
  return 0;
}

}  // namespace memtap
