// A CSV's header: which recording format it announces, and where each column is.
//
// Columns are found by name, never by position: the torch_npu and CANN variants of the
// same file order and extend their columns differently, and msMemScope's docs spell
// `Thread ID` where its files say `Thread Id`. Names compare trimmed and case-insensitive.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memtap::reader {

enum class CsvKind { kUnknown, kMsmemscope, kOperatorMemory, kMemoryRecord };

class CsvHeader {
 public:
  explicit CsvHeader(const std::vector<std::string_view>& fields);

  // Position of the column named `name`, or -1.
  int find(std::string_view name) const;
  // Position of the first column named `prefix` + "(<unit>)" (e.g. "Total Allocated" finds
  // `Total Allocated(MB)`), or -1; *bytes_per_unit gets 1 for B, 1024 for KB, 1 MiB for
  // MB, 1 GiB for GB (-1 and 0 when the unit is none of those).
  int find_sized(std::string_view prefix, int64_t* bytes_per_unit) const;

  const std::vector<std::string>& names() const { return names_; }
  // The header as it was, for messages (shortened when long).
  std::string text() const;

 private:
  std::vector<std::string> names_;
};

// The format a header announces, by its telling columns: `Event` (msMemScope),
// `Component` (memory_record), `Allocation Time(us)` or `Size(KB)` (operator_memory).
CsvKind classify_header(const CsvHeader& header);

// Which headers are understood, for the message about a file that has none of them.
std::string expected_formats_text();

// The first of `names` the header has, or -1.
int find_any(const CsvHeader& header, std::initializer_list<std::string_view> names);

}  // namespace memtap::reader
