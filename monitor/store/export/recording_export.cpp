// The exports' front (see recording_export.h): format names, the choice between copying a
// database and writing from events, and the output's `.partial` and rename.
#include "monitor/store/export/recording_export.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "monitor/store/export/dump_export.h"
#include "monitor/store/export/memory_record_export.h"
#include "monitor/store/export/operator_memory_export.h"
#include "monitor/store/export/partial_output.h"
#include "monitor/store/export/torch_snapshot_export.h"
#include "monitor/store/memscope_export.h"

namespace memtap {

std::optional<ExportFormat> parse_export_format(std::string_view name) {
  if (name == "msmemscope-db") return ExportFormat::kMsmemscopeDb;
  if (name == "msmemscope-csv") return ExportFormat::kMsmemscopeCsv;
  if (name == "operator-memory") return ExportFormat::kOperatorMemory;
  if (name == "memory-record") return ExportFormat::kMemoryRecord;
  if (name == "torch-snapshot") return ExportFormat::kTorchSnapshot;
  return std::nullopt;
}

const char* export_format_names() {
  return "msmemscope-db, msmemscope-csv, operator-memory, memory-record, torch-snapshot";
}

const char* export_format_name(ExportFormat format) {
  switch (format) {
    case ExportFormat::kMsmemscopeDb:
      return "msmemscope-db";
    case ExportFormat::kMsmemscopeCsv:
      return "msmemscope-csv";
    case ExportFormat::kOperatorMemory:
      return "operator-memory";
    case ExportFormat::kMemoryRecord:
      return "memory-record";
    case ExportFormat::kTorchSnapshot:
      return "torch-snapshot";
  }
  return "?";
}

bool is_sqlite_database(const std::string& path) {
  static constexpr char kMagic[] = "SQLite format 3";  // with its NUL: 16 bytes
  char head[sizeof kMagic] = {};
  std::ifstream file(path, std::ios::binary);
  file.read(head, sizeof head);
  return file.gcount() == sizeof head && std::memcmp(head, kMagic, sizeof head) == 0;
}

bool export_recording(const std::string& in, ExportFormat format, const std::string& out,
                      std::string* error) {
  ExportSummary summary;
  return export_recording(in, format, out, ExportOptions{}, &summary, error);
}

bool export_recording(const std::string& in, ExportFormat format, const std::string& out,
                      const ExportOptions& options, ExportSummary* summary, std::string* error) {
  *summary = ExportSummary{};
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec)) {
    *error = out + ": the output would replace the input";
    return false;
  }
  // A database into msMemScope's table: copied row for row by SQL, python_trace tables and
  // all, rather than read and written again.
  if (format == ExportFormat::kMsmemscopeDb && !options.pid && is_sqlite_database(in)) {
    summary->copied = true;
    return export_memscope_table(in, out, error);
  }
  PartialOutput output(out);
  bool written = false;
  switch (format) {
    case ExportFormat::kMsmemscopeDb:
    case ExportFormat::kMsmemscopeCsv:
      written = export_dump_rows(in, format, output.partial_path(), options, summary, error);
      break;
    case ExportFormat::kOperatorMemory:
      written = export_operator_memory(in, output.partial_path(), options, summary, error);
      break;
    case ExportFormat::kMemoryRecord:
      written = export_memory_record(in, output.partial_path(), options, summary, error);
      break;
    case ExportFormat::kTorchSnapshot:
      written = export_torch_snapshot(in, output.partial_path(), options, summary, error);
      break;
  }
  return written && output.commit(error);
}

}  // namespace memtap
