// The CANN / torch_npu profiler's operator_memory.csv: one memory block per row.
//
// Two variants are read: torch_npu's
//   Name,Size(KB),Allocation Time(us),Release Time(us),Duration(us),
//   Allocation Total Allocated(MB),...,Release Total Reserved(MB),[Stream Ptr,]Device Type
// and CANN's (design §6)
//   Device_id,Name,Size(KB),Allocation Time(us),Duration(us),
//   Allocation Total Allocated(KB),...,Release Total Reserved(KB),Device
// A row becomes a MALLOC at its allocation time and a FREE at its release time (or the
// allocation time plus the duration), layer kPta, named by the operator, with the pool
// totals of either moment as pool_used / pool_total. A negative size is a block freed but
// never seen allocated (a FREE only, at the release time or else the one time given); an
// empty release is a block never freed (a MALLOC only).
//
// The file has no addresses, yet the engine pairs a FREE with its MALLOC by address: each
// block gets a synthetic one (blocks laid end to end in file order from kSyntheticBase,
// 512-byte aligned, so no two overlap) and its row number as allocation id. Times in us
// become ns exactly (the decimal digits are kept, not rounded through a double).
#pragma once

#include <cstdint>
#include <string>

#include "monitor/store/reader/csv_header.h"
#include "monitor/store/reader/csv_reader.h"
#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"

namespace memtap::reader {

inline constexpr uint64_t kSyntheticBase = uint64_t(1) << 44;

// Appends the events of the rows after the header to out->events, in file order.
bool read_operator_memory_csv(CsvReader* csv, const CsvHeader& header, const std::string& path,
                              Recording* out, RowProblems* problems, std::string* error);

}  // namespace memtap::reader
