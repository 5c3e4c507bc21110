// Any file memtap reads, written out in the formats other tools read.
//
//   --format          what is written
//   msmemscope-db     SQLite in msMemScope's own memscope_dump table with its indexes, as
//                     MindStudio Insight opens it (memscope_export.h copies a memtap or
//                     msMemScope database by SQL; any other input is written from its events
//                     by dump_db_writer.h)
//   msmemscope-csv    msMemScope's CSV export: ID,Event,Event Type,Name,Timestamp(ns),
//                     Process Id,Thread Id,Device Id,Ptr,Attr,Call Stack(Python),Call Stack(C)
//                     (dump_csv_writer.h)
//   operator-memory   CANN / torch_npu operator_memory.csv: one block per row
//                     (operator_memory_export.h)
//   memory-record     CANN / torch_npu memory_record.csv: pool totals over time
//                     (memory_record_export.h)
//   torch-snapshot    the pickle torch.cuda.memory._dump_snapshot() writes, which PyTorch's
//                     memory viewer opens (torch_snapshot_export.h)
//
// Conventions of each: ../shared/DESIGN.md §6 and docs/design-notes.md, monitor/store/export.
// `memtap import FILE -o OUT.db` is the msmemscope-db export of a file that is not a database (a
// PyTorch snapshot). Reading any of these back (`memtap report`) gives the figures the input gave,
// as far as the format carries them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memtap {

struct ReadProgress;  // monitor/store/reader/read_progress.h

enum class ExportFormat {
  kMsmemscopeDb,
  kMsmemscopeCsv,
  kOperatorMemory,
  kMemoryRecord,
  kTorchSnapshot,
};

// "msmemscope-db" -> kMsmemscopeDb, ...; nullopt for any other name.
std::optional<ExportFormat> parse_export_format(std::string_view name);
// The names parse_export_format takes, for messages: "msmemscope-db, msmemscope-csv, ...".
const char* export_format_names();
// The name of `format` as parse_export_format takes it.
const char* export_format_name(ExportFormat format);

struct ExportOptions {
  // Only this process's events (`--pid`). operator-memory and memory-record have no process
  // column, so an input with memory events of several processes needs one.
  std::optional<uint32_t> pid;
  // Counts the rows read (read_progress.h), for the command's progress line; may be null.
  ReadProgress* progress = nullptr;
};

struct ExportSummary {
  bool copied = false;  // a database copied by SQL (memscope_export.h); the counts stay 0
  uint64_t rows = 0;    // rows written (not counting a CSV's header)
  // Events of the input the format has no row for (event_dump_row.h), with what they were:
  // "3 ACCESS, 1 other".
  uint64_t left_out = 0;
  std::string left_out_what;
  // The reader's line about rows of the input it could not read (they are not in the
  // output): Recording::warning; "" if none.
  std::string unread_rows;
  // What else the command should tell of the file it wrote, a line each.
  std::vector<std::string> notes;
};

// Whether `path` is an SQLite database (by its first bytes, as the reader tells formats):
// `memtap import` takes the files that are not.
bool is_sqlite_database(const std::string& path);

// Reads `in` (any format read_recording takes) and writes `out` in `format`, under
// `<out>.partial` renamed when complete. False with *error, one line naming the file and
// what was wrong. `in` and `out` must differ.
bool export_recording(const std::string& in, ExportFormat format, const std::string& out,
                      std::string* error);
bool export_recording(const std::string& in, ExportFormat format, const std::string& out,
                      const ExportOptions& options, ExportSummary* summary, std::string* error);

}  // namespace memtap
