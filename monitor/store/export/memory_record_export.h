// The memory-record export: torch_npu's memory_record.csv, a device's totals over time, with
// the newest header torch_npu writes (the MindStudio Insight sample of rank 1):
//   Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),
//   Stream Ptr,Device Type
//
// One row each time a memory event (MALLOC, FREE, FREE_COMPLETED, SNAPSHOT) changed one of
// the device's Allocated, Reserved or Active curves (device_curves.h), with the curves after
// it, the event's stream (Stream Ptr; empty without one) and the device ("NPU:0", "CPU").
// Component names what Allocated counts there, as torch_npu names its pool: "PTA" (or the
// framework layer's own name) once the device has framework blocks or pool samples, else
// "HAL" for a device's driver blocks and "HOST" for the host's heap. Reading the file back
// gives the curves at every change; memtap's reader takes a PTA row on a device as the
// pool's figures, so there the report's Allocated and Reserved are the input's. The file
// has no process column: an input with memory of several processes needs --pid.
#pragma once

#include <string>

#include "monitor/store/export/recording_export.h"

namespace memtap {

// The header line, without its newline (for tests that compare it with the samples').
extern const char* const kMemoryRecordHeader;

// Writes `partial` (which must not exist).
bool export_memory_record(const std::string& in, const std::string& partial,
                          const ExportOptions& options, ExportSummary* summary, std::string* error);

}  // namespace memtap
