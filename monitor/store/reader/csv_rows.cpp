// Reading the records after a CSV header (see csv_rows.h).
#include "monitor/store/reader/csv_rows.h"

namespace memtap::reader {

bool for_each_csv_row(
    CsvReader* csv, const CsvHeader& header, const std::string& path, RowProblems* problems,
    const std::function<bool(const std::vector<std::string_view>&, std::string*)>& decode,
    std::string* error) {
  const size_t columns = header.names().size();
  std::vector<std::string_view> fields;
  std::string problem;
  std::string read_error;
  while (true) {
    const CsvReader::Next next = csv->next(&fields, &read_error);
    if (next == CsvReader::Next::kEnd) return true;
    if (next == CsvReader::Next::kError) {
      *error = path + ": " + read_error;
      return false;
    }
    ++problems->rows;
    problem.clear();
    bool ok = true;
    if (!csv->malformed().empty()) {
      problem = csv->malformed();
      ok = false;
    } else if (fields.size() > columns) {
      // An unquoted comma shifts every later column: better lost than misread.
      problem =
          std::to_string(fields.size()) + " fields where the header has " + std::to_string(columns);
      ok = false;
    } else if (fields.size() < columns && csv->unterminated()) {
      // The file ends inside this row: its last field is a cut number or text.
      problem = "the file ends inside this row (" + std::to_string(fields.size()) + " of " +
                std::to_string(columns) + " fields, no newline): cut short?";
      ok = false;
    } else {
      fields.resize(columns);  // missing trailing fields read as empty
      ok = decode(fields, &problem);
    }
    if (!ok) skip_row(problems, "line " + std::to_string(csv->record_line()), problem);
  }
}

std::string missing_column_error(const std::string& path, std::string_view format,
                                 std::string_view column, const CsvHeader& header) {
  return path + ": line 1: " + std::string(format) + " header has no column '" +
         std::string(column) + "' (header: " + header.text() + ")";
}

}  // namespace memtap::reader
