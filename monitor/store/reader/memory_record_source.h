// The CANN / torch_npu profiler's memory_record.csv: a component's pool totals over time.
//
// torch_npu writes `Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),
// [Total Active(MB),Stream Ptr,]Device Type`, CANN `Device_id,Component,Timestamp(us),
// Total Allocated(KB),Total Reserved(KB),Device`. Each row is a kSnapshot event named by
// its component (APP, PTA, GE, PTA+GE, ...) with snap_allocated / snap_reserved in bytes
// (an empty figure is kUnknown). A component that names a layer is that layer's (PTA, and
// HAL or HOST in memtap's own exports); any other but APP and sums (PTA+GE), such as GE,
// is a framework pool too, layer PTA: a device's PTA rows are its pool samples, which
// monitor/engine/pool_samples.h adds up by component. APP's Total Reserved is also
// snap_app_reserved: the whole process on the device.
#pragma once

#include <string>

#include "monitor/store/reader/csv_header.h"
#include "monitor/store/reader/csv_reader.h"
#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"

namespace memtap::reader {

// Appends the events of the rows after the header to out->events, in file order.
bool read_memory_record_csv(CsvReader* csv, const CsvHeader& header, const std::string& path,
                            Recording* out, RowProblems* problems, std::string* error);

}  // namespace memtap::reader
