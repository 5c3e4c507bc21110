// A CSV's header (see csv_header.h).
#include "monitor/store/reader/csv_header.h"

#include "monitor/store/reader/text_values.h"

namespace memtap::reader {

CsvHeader::CsvHeader(const std::vector<std::string_view>& fields) {
  for (std::string_view field : fields) names_.emplace_back(trim(field));
}

int CsvHeader::find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (equals_ignore_case(names_[i], name)) return int(i);
  }
  return -1;
}

int CsvHeader::find_sized(std::string_view prefix, int64_t* bytes_per_unit) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::string_view name = names_[i];
    if (name.size() < prefix.size() + 2 ||
        !equals_ignore_case(name.substr(0, prefix.size()), prefix) || name[prefix.size()] != '(' ||
        name.back() != ')') {
      continue;
    }
    const std::string_view unit = name.substr(prefix.size() + 1, name.size() - prefix.size() - 2);
    *bytes_per_unit = equals_ignore_case(unit, "B")    ? 1
                      : equals_ignore_case(unit, "KB") ? int64_t(1) << 10
                      : equals_ignore_case(unit, "MB") ? int64_t(1) << 20
                      : equals_ignore_case(unit, "GB") ? int64_t(1) << 30
                                                       : 0;
    return *bytes_per_unit == 0 ? -1 : int(i);
  }
  return -1;
}

std::string CsvHeader::text() const {
  std::string joined;
  for (const std::string& name : names_) {
    if (!joined.empty()) joined += ',';
    joined += name;
  }
  return quote_for_message(joined, 120);
}

CsvKind classify_header(const CsvHeader& header) {
  if (header.find("Event") >= 0) return CsvKind::kMsmemscope;
  if (header.find("Component") >= 0) return CsvKind::kMemoryRecord;
  if (header.find("Allocation Time(us)") >= 0 || header.find("Size(KB)") >= 0) {
    return CsvKind::kOperatorMemory;
  }
  return CsvKind::kUnknown;
}

std::string expected_formats_text() {
  return "an SQLite database with a memscope_dump or leaks_dump table, or a CSV headed "
         "msMemScope's 'ID,Event,Event Type,Name,Timestamp(ns),...', operator_memory's "
         "'Name,Size(KB),Allocation Time(us),...' or memory_record's "
         "'Component,Timestamp(us),Total Allocated(MB),...', or a PyTorch memory snapshot (the "
         "pickle of torch.cuda.memory._dump_snapshot)";
}

int find_any(const CsvHeader& header, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (const int at = header.find(name); at >= 0) return at;
  }
  return -1;
}

}  // namespace memtap::reader
