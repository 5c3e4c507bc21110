// Field reading shared by the profiler's CSVs (operator_memory.csv, memory_record.csv).
//
// Their numbers are decimals with a unit in the column name (`Size(KB)`, `Total
// Reserved(MB)`, `Timestamp(us)`), sometimes padded with a tab, sometimes in exponent form
// after a trip through a spreadsheet (`1.69512E+15`), and empty where the profiler did not
// see the value. Empty reads as kUnknown; anything else that is not a number is a problem
// naming the column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/store/reader/csv_header.h"

namespace memtap::reader {

// A column whose name carries a byte unit: `<prefix>(KB)` and the like.
struct SizedColumn {
  int index = -1;
  int64_t bytes_per_unit = 0;
};
SizedColumn sized_column(const CsvHeader& header, std::string_view prefix);

class ProfilerRow {
 public:
  ProfilerRow(const CsvHeader& header, const std::vector<std::string_view>& fields,
              std::string* problem)
      : header_(header), fields_(fields), problem_(problem) {}

  // round(value * multiplier * 10^pow10); kUnknown when the column is absent or empty.
  bool number(int column, int64_t multiplier, int pow10, int64_t* value);
  // A time in microseconds, as nanoseconds.
  bool time_us(int column, int64_t* ns) { return number(column, 1, 3, ns); }
  // A size in the column's unit, as bytes.
  bool bytes(const SizedColumn& column, int64_t* value) {
    return number(column.index, column.bytes_per_unit, 0, value);
  }
  // `NPU:0`, `0`, ...; kNoDevice when absent or empty.
  bool device(int column, int32_t* device);
  // `Stream Ptr` (decimal, or exponent form); 0 when absent or empty.
  bool stream(int column, uint64_t* stream);

 private:
  bool fail(int column, std::string_view what);

  const CsvHeader& header_;
  const std::vector<std::string_view>& fields_;
  std::string* problem_;
};

}  // namespace memtap::reader
