// msMemScope's CSV export (memscope_dump_<time>.csv): the dump table's columns as CSV.
//
// Same columns and mapping as the database (dump_row_decoder.h); Attr and call stacks are
// quoted fields. Only `Event` and `Timestamp(ns)` are required: a missing optional column
// reads as empty.
#pragma once

#include <string>

#include "monitor/store/reader/csv_header.h"
#include "monitor/store/reader/csv_reader.h"
#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"

namespace memtap::reader {

// Appends the events of the records after the header to out->events, in file order.
bool read_msmemscope_csv(CsvReader* csv, const CsvHeader& header, const std::string& path,
                         Recording* out, RowProblems* problems, std::string* error);

}  // namespace memtap::reader
