// Rows that could not be understood: counted, the first one described.
//
// A long recording with one bad row should still open, so a bad row is skipped and
// reported once as a warning ("3 of 330 rows skipped; the first, line 17: ...") rather
// than failing the file; only a file where no row at all could be read is an error.
#pragma once

#include <cstdint>
#include <string>

namespace memtap::reader {

struct RowProblems {
  uint64_t rows = 0;     // data rows met (a CSV's header is not one)
  uint64_t skipped = 0;  // of those, rows that gave no event
  std::string first;     // "line 17: Timestamp(ns) 'abc' is not a number"
};

// Counts a skipped row; keeps `where` ("line 17", "ID 42") and `what` if it is the first.
void skip_row(RowProblems* problems, const std::string& where, const std::string& what);

// Adds a part's problems (a thread's share of a file) to the total; the first problem
// stays the earliest part's, so parts must be added in file (or time) order.
void add_problems(const RowProblems& part, RowProblems* total);

// The one-line warning for `path` (empty when nothing was skipped).
std::string problems_warning(const std::string& path, const RowProblems& problems);

// Whether rows were met but none could be read: the file is then an error, with
// problems_error as its message.
bool nothing_readable(const RowProblems& problems);
std::string problems_error(const std::string& path, const RowProblems& problems);

}  // namespace memtap::reader
