// Fuzzes the msMemScope CSV export's reading (csv_reader, csv_header, csv_rows,
// msmemscope_csv_source, and the dump row decoder behind it): the input is the file, read
// as `memtap report FILE` reads it (held and streamed), and its records handed to the
// msMemScope source whatever its header says.
//
// Seeds: msMemScope's CSV files (../shared/data/msmemscope) and tests/fuzz/seeds/memscope_csv.
#include <cstdint>
#include <string>

#include "monitor/store/reader/msmemscope_csv_source.h"
#include "tests/fuzz/csv_fuzz_support.h"

using namespace memtap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::input_path("memscope_csv", ".csv");
  fuzz::write_input(path, data, size);
  fuzz::read_both_ways(path);
  fuzz::export_as_snapshot(path);
  fuzz::read_with(path, reader::read_msmemscope_csv);
  return 0;
}
