// `memtap import FILE [-o OUT.db]`: a file that is not a recording database (a PyTorch
// memory snapshot, msMemScope's or the profiler's CSVs) made into one, in msMemScope's
// format, which report, replay and monitor then open like any recording: the msmemscope-db
// export of store/export/recording_export.h.
#include <cstdio>
#include <string>

#include "monitor/cli/commands.h"
#include "monitor/cli/export_messages.h"
#include "monitor/cli/file_and_output.h"

namespace memtap {

int import_command(const std::vector<std::string>& args) {
  std::string in, out, bad;
  if (!parse_file_and_output(args, &in, &out, &bad)) {
    fprintf(stderr, "memtap import: unexpected argument '%s' (memtap import FILE [-o OUT.db])\n",
            bad.c_str());
    return 2;
  }
  if (in.empty()) {
    fprintf(stderr, "memtap import: no file given (memtap import FILE [-o OUT.db])\n");
    return 2;
  }
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
