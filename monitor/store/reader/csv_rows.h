// What the CSV sources share: reading each record after the header with its line number,
// and the checks every row gets (quoting, field count).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/store/reader/csv_header.h"
#include "monitor/store/reader/csv_reader.h"
#include "monitor/store/reader/row_problems.h"

namespace memtap::reader {

// Calls `decode(fields, &problem)` for every record after the header; a record whose
// quoting is broken, that has more fields than the header, that the end of the file cuts
// (fewer fields and no newline), or that `decode` refuses, is skipped as "line N:
// <problem>". Otherwise missing trailing fields read as empty. False with
// *error ("<path>: cannot read: ...") only when the file cannot be read.
bool for_each_csv_row(
    CsvReader* csv, const CsvHeader& header, const std::string& path, RowProblems* problems,
    const std::function<bool(const std::vector<std::string_view>&, std::string*)>& decode,
    std::string* error);

// The message for a header without a column its format needs.
std::string missing_column_error(const std::string& path, std::string_view format,
                                 std::string_view column, const CsvHeader& header);

}  // namespace memtap::reader
