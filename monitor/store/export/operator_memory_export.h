// The operator-memory export: torch_npu's operator_memory.csv, one memory block per row,
// with the newest header torch_npu writes (the MindStudio Insight sample of rank 1):
//   Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),
//   Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),
//   Allocation Total Active(MB),Release Total Allocated(MB),Release Total Reserved(MB),
//   Release Total Active(MB),Stream Ptr,Device Type
//
// A block is a MALLOC and the FREE of the same address on the same device and layer. Name is
// the operator that allocated it (the MALLOC's Name: the innermost open operator, or for a
// device block without one the API), empty where the recording does not know. Times are
// torch_npu's (profiler_csv_text.h): the release is the FREE, the active release when the
// block stopped counting in Active (its FREE_COMPLETED when the FREE was pending on another
// stream, else the FREE). The totals are the device's Allocated, Reserved and Active curves
// (device_curves.h) right after the MALLOC and right after the FREE. A block freed but never
// seen allocated has a negative size and empty allocation columns; a block never freed has
// empty release columns.
//
// The rows are the blocks Allocated counts, as the curves do: a device's framework pool's
// (PTA and the like) once it has any, else its driver blocks (HAL); on the host ("CPU") the
// heap and pinned blocks, not anonymous mappings. So reading the file back (memtap's reader
// takes each row as a PTA block) gives the same Allocated curve and the same blocks. Rows are
// in order of their first time, as torch_npu orders them. The file has no process column: an
// input with memory of several processes needs --pid.
#pragma once

#include <string>

#include "monitor/store/export/recording_export.h"

namespace memtap {

// The header line, without its newline (for tests that compare it with the samples').
extern const char* const kOperatorMemoryHeader;

// Writes `partial` (which must not exist).
bool export_operator_memory(const std::string& in, const std::string& partial,
                            const ExportOptions& options, ExportSummary* summary,
                            std::string* error);

}  // namespace memtap
