// Field reading shared by the profiler's CSVs (see profiler_csv_values.h).
#include "monitor/store/reader/profiler_csv_values.h"

#include "monitor/model/mem_event.h"
#include "monitor/store/reader/text_values.h"

namespace memtap::reader {

SizedColumn sized_column(const CsvHeader& header, std::string_view prefix) {
  SizedColumn column;
  column.index = header.find_sized(prefix, &column.bytes_per_unit);
  return column;
}

bool ProfilerRow::fail(int column, std::string_view what) {
  *problem_ = header_.names()[column] + " " + quote_for_message(fields_[column]) + " is not " +
              std::string(what);
  return false;
}

bool ProfilerRow::number(int column, int64_t multiplier, int pow10, int64_t* value) {
  *value = kUnknown;
  if (column < 0 || is_absent(fields_[column])) return true;
  if (parse_decimal_times(trim(fields_[column]), multiplier, pow10, value)) return true;
  return fail(column, "a number");
}

bool ProfilerRow::device(int column, int32_t* device) {
  *device = kNoDevice;
  if (column < 0 || parse_device(fields_[column], device)) return true;
  return fail(column, "a device (NPU:0, 0, ...)");
}

bool ProfilerRow::stream(int column, uint64_t* stream) {
  *stream = 0;
  if (column < 0 || is_absent(fields_[column])) return true;
  int64_t value = 0;
  if (!parse_decimal_times(trim(fields_[column]), 1, 0, &value) || value < 0) {
    return fail(column, "a stream address");
  }
  *stream = uint64_t(value);
  return true;
}

}  // namespace memtap::reader
