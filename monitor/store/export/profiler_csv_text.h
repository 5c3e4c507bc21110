// Numbers and devices as the CANN / torch_npu profiler's CSVs spell them (operator_memory.csv,
// memory_record.csv; samples in ../shared/data/msmemscope/), for writing those files.
//
// torch_npu writes times in microseconds with the nanoseconds as three decimals and a tab
// after them ("1706704429088523.015\t": the tab keeps a spreadsheet from turning the number
// into 1.70670E+15, as one of the samples shows happened to a file without it), sizes in KB
// and totals in MB as decimals ("75776.0", "443.79541015625"), devices as "NPU:0" (its
// device memory) or "CPU". The sizes here are exact decimals of bytes / 1024 and bytes /
// 1048576, which always end, so a reader gets the bytes back exactly (memtap's does:
// profiler_csv_values.h).
#pragma once

#include <cstdint>
#include <string>

namespace memtap {

// Nanoseconds as microseconds with three decimals: 1706704429088523015 -> "1706704429088523.015".
// Negative values are written with their sign.
std::string us_text(int64_t ns);
// The same followed by the tab torch_npu puts after every time it writes.
std::string us_cell(int64_t ns);
// Bytes in KB (1024) and in MB (1048576), exact: 76 -> "0.07421875", 1024 -> "1.0".
std::string kb_text(int64_t bytes);
std::string mb_text(int64_t bytes);
// `Device Type`: "NPU:<n>" for a device, "CPU" for the host (kHostDevice), "" for none.
std::string device_type_text(int32_t device);
// `Stream Ptr`: the stream in decimal, "" for none (0).
std::string stream_text(uint64_t stream);

}  // namespace memtap
