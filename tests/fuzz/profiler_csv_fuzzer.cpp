// Fuzzes the CANN / MindStudio profiler CSVs' reading (operator_memory_source,
// memory_record_source, profiler_csv_values and the CSV layer under them): the input is the
// file, read as `memtap report FILE` reads it (held and streamed), and its records handed
// to both profiler sources whatever its header says.
//
// Seeds: MindStudio Insight's operator_memory and memory_record files
// (../shared/data/msmemscope) and tests/fuzz/seeds/profiler_csv.
#include <cstdint>
#include <string>

#include "monitor/store/reader/memory_record_source.h"
#include "monitor/store/reader/operator_memory_source.h"
#include "tests/fuzz/csv_fuzz_support.h"

using namespace memtap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::input_path("profiler_csv", ".csv");
  fuzz::write_input(path, data, size);
  fuzz::read_both_ways(path);
  fuzz::read_with(path, reader::read_operator_memory_csv);
  fuzz::read_with(path, reader::read_memory_record_csv);
  return 0;
}
