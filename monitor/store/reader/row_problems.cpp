// Rows that could not be understood (see row_problems.h).
#include "monitor/store/reader/row_problems.h"

namespace memtap::reader {

void skip_row(RowProblems* problems, const std::string& where, const std::string& what) {
  if (problems->skipped++ == 0) problems->first = where + ": " + what;
}

std::string problems_warning(const std::string& path, const RowProblems& problems) {
  if (problems.skipped == 0) return "";
  return path + ": " + std::to_string(problems.skipped) + " of " + std::to_string(problems.rows) +
         " rows skipped; the first, " + problems.first;
}

bool nothing_readable(const RowProblems& problems) {
  return problems.rows > 0 && problems.skipped == problems.rows;
}

std::string problems_error(const std::string& path, const RowProblems& problems) {
  return path + ": none of the " + std::to_string(problems.rows) +
         " rows could be read; the first, " + problems.first;
}

void add_problems(const RowProblems& part, RowProblems* total) {
  if (total->skipped == 0 && part.skipped > 0) total->first = part.first;
  total->rows += part.rows;
  total->skipped += part.skipped;
}

}  // namespace memtap::reader
