// The CSV fuzz targets' common step: a format's reader called on the input's records after
// its first line, whichever header that line is, as read_csv calls it once the header has
// been classified.
#pragma once

#include <string>

#include "monitor/store/reader/csv_header.h"
#include "monitor/store/reader/csv_reader.h"
#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"
#include "tests/fuzz/fuzz_support.h"

namespace memtap::fuzz {

using CsvSourceFn = bool (*)(reader::CsvReader* csv, const reader::CsvHeader& header,
                             const std::string& path, Recording* out, reader::RowProblems* problems,
                             std::string* error);

inline void read_with(const std::string& path, CsvSourceFn source) {
  std::string error;
  const auto csv = reader::CsvReader::open(path, &error);
  if (csv == nullptr) fail("cannot open the input file", error);
  std::vector<std::string_view> fields;
  if (csv->next(&fields, &error) != reader::CsvReader::Next::kRecord) return;
  const reader::CsvHeader header(fields);
  Recording out;
  reader::RowProblems problems;
  if (!source(csv.get(), header, path, &out, &problems, &error)) {
    check_read(path, false, error, out);
    return;
  }
  if (problems.skipped > problems.rows) fail("more rows skipped than read");
  if (problems.first.find('\n') != std::string::npos) fail("a row's problem is not one line");
  for (const MemEvent& e : out.events) {
    for (uint32_t id : {e.name, e.owner, e.stack_python, e.stack_c}) {
      if (id >= out.strings.size()) fail("event refers to a string that does not exist");
    }
  }
}

}  // namespace memtap::fuzz
