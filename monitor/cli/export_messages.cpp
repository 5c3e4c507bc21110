// See export_messages.h.
#include "monitor/cli/export_messages.h"

#include <cstdio>

#include "monitor/live/live_support.h"
#include "monitor/report/units.h"

namespace memtap {
namespace {

// MindStudio Insight's importer: ^(memscope|leaks)_dump_\d+\.db$ on the file name.
bool insight_imports(const std::string& name) {
  for (const std::string prefix : {"memscope_dump_", "leaks_dump_"}) {
    if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + 3) continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (name.compare(name.size() - 3, 3, ".db") != 0) return false;
    return digits.find_first_not_of("0123456789") == std::string::npos;
  }
  return false;
}

}  // namespace

std::string default_export_path(ExportFormat format) {
  const std::string db = default_db_path();  // ./memscope_dump_<time>.db
  const std::string prefix = "./memscope_dump_";
  const std::string time = db.substr(prefix.size(), db.size() - prefix.size() - 3);
  switch (format) {
    case ExportFormat::kMsmemscopeDb:
      return db;
    case ExportFormat::kMsmemscopeCsv:
      return prefix + time + ".csv";
    case ExportFormat::kOperatorMemory:
      return "./operator_memory_" + time + ".csv";
    case ExportFormat::kMemoryRecord:
      return "./memory_record_" + time + ".csv";
    case ExportFormat::kTorchSnapshot:
      return "./snapshot_" + time + ".pickle";
  }
  return db;
}

void print_export_written(const char* command, const std::string& out, ExportFormat format,
                          const ExportSummary& summary) {
  const auto rows = [&](const char* what) {
    return std::to_string(summary.rows) + " " + what + (summary.rows == 1 ? "" : "s");
  };
  switch (format) {
    case ExportFormat::kMsmemscopeDb:
      fprintf(stderr, "%s: wrote %s (msMemScope's memscope_dump table)\n", command, out.c_str());
      break;
    case ExportFormat::kMsmemscopeCsv:
      fprintf(stderr, "%s: wrote %s (msMemScope's CSV export, %s)\n", command, out.c_str(),
              rows("row").c_str());
      break;
    case ExportFormat::kOperatorMemory:
      fprintf(stderr, "%s: wrote %s (torch_npu's operator_memory.csv, %s)\n", command, out.c_str(),
              rows("block").c_str());
      break;
    case ExportFormat::kMemoryRecord:
      fprintf(stderr, "%s: wrote %s (torch_npu's memory_record.csv, %s)\n", command, out.c_str(),
              rows("row").c_str());
      break;
    case ExportFormat::kTorchSnapshot:
      fprintf(
          stderr,
          "%s: wrote %s (a PyTorch memory snapshot, %s; open it at "
          "https://pytorch.org/memory_viz)\n",
          command, out.c_str(),
          (std::to_string(summary.rows) + (summary.rows == 1 ? " trace entry" : " trace entries"))
              .c_str());
      break;
  }
  for (const std::string& note : summary.notes) {
    fprintf(stderr, "%s: note: %s\n", command, note.c_str());
  }
  if (!summary.unread_rows.empty()) {
    fprintf(stderr, "%s: note: %s\n", command, summary.unread_rows.c_str());
  }
  if (summary.left_out > 0) {
    fprintf(stderr,
            "%s: note: left out %s event%s that msMemScope's rows, as memtap writes them, have "
            "no place for (%s)\n",
            command, count_text(summary.left_out).c_str(), summary.left_out == 1 ? "" : "s",
            summary.left_out_what.c_str());
  }
  // MindStudio Insight's importer matches the file name, not the content.
  const std::string name = out.substr(out.find_last_of('/') + 1);
  if (format == ExportFormat::kMsmemscopeDb && !insight_imports(name)) {
    fprintf(stderr,
            "%s: note: MindStudio Insight imports only files named memscope_dump_<digits>.db\n",
            command);
  }
}

}  // namespace memtap
