// Any file memtap reads, written out in the formats other tools read.
//
//   --format          what is written
//   msmemscope-db     SQLite in msMemScope's own memscope_dump table with its indexes, as
//                     MindStudio Insight opens it (memscope_export.h copies a memtap or
//                     msMemScope database by SQL; any other input is written from its events)
//   msmemscope-csv    msMemScope's CSV export: ID,Event,Event Type,Name,Timestamp(ns),
//                     Process Id,Thread Id,Device Id,Ptr,Attr,Call Stack(Python),Call Stack(C)
//   operator-memory   CANN / torch_npu operator_memory.csv: one block per row
//   memory-record     CANN / torch_npu memory_record.csv: pool totals over time
//
// Conventions of each: ../shared/DESIGN.md §6 and docs/design.md. `memtap import FILE -o
// OUT.db` is the msmemscope-db export of a file that is not a database (a PyTorch snapshot).
// Reading any of these back (`memtap report`) gives the figures the input gave.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace memtap {

enum class ExportFormat { kMsmemscopeDb, kMsmemscopeCsv, kOperatorMemory, kMemoryRecord };

// "msmemscope-db" -> kMsmemscopeDb, ...; nullopt for any other name.
std::optional<ExportFormat> parse_export_format(std::string_view name);
// The names parse_export_format takes, for messages: "msmemscope-db, msmemscope-csv, ...".
const char* export_format_names();

// Reads `in` (any format read_recording takes) and writes `out` in `format`, under
// `<out>.partial` renamed when complete. False with *error, one line naming the file and
// what was wrong. `in` and `out` must differ.
bool export_recording(const std::string& in, ExportFormat format, const std::string& out,
                      std::string* error);

}  // namespace memtap
