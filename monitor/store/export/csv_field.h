// A field of a CSV record as RFC 4180 has it, which memtap's reader (reader/csv_reader.h),
// Python's csv module and spreadsheets read back as it was: quoted when it holds a comma, a
// quote, CR or LF, with its quotes doubled; as it is otherwise.
#pragma once

#include <string>
#include <string_view>

namespace memtap {

// Appends `text` to *line as one field (no separator).
void append_csv_field(std::string* line, std::string_view text);

}  // namespace memtap
