// msMemScope's CSV export (see msmemscope_csv_source.h).
#include "monitor/store/reader/msmemscope_csv_source.h"

#include "monitor/store/reader/csv_rows.h"
#include "monitor/store/reader/dump_row_decoder.h"

namespace memtap::reader {

bool read_msmemscope_csv(CsvReader* csv, const CsvHeader& header, const std::string& path,
                         Recording* out, RowProblems* problems, std::string* error) {
  // Attr holds every block's size: without it each figure would read 0 B, not an error.
  for (const char* required : {"Event", "Timestamp(ns)", "Attr"}) {
    if (header.find(required) < 0) {
      *error = missing_column_error(path, "msMemScope CSV", required, header);
      return false;
    }
  }
  const int event = header.find("Event");
  const int event_type = header.find("Event Type");
  const int name = header.find("Name");
  const int timestamp = header.find("Timestamp(ns)");
  const int pid = header.find("Process Id");
  const int tid = header.find("Thread Id");
  const int device = header.find("Device Id");
  const int ptr = header.find("Ptr");
  const int attr = header.find("Attr");
  const int stack_python = header.find("Call Stack(Python)");
  const int stack_c = header.find("Call Stack(C)");

  DumpRowDecoder decoder(&out->strings);
  auto decode = [&](const std::vector<std::string_view>& fields, std::string* problem) {
    const auto text = [&](int column) { return column >= 0 ? fields[column] : std::string_view(); };
    const auto number = [&](int column) {
      NumberField field;
      if (column >= 0 && !fields[column].empty()) {
        field.type = NumberField::Type::kText;
        field.text = fields[column];
      }
      return field;
    };
    DumpFields row;
    row.event = text(event);
    row.event_type = text(event_type);
    row.name = text(name);
    row.device = text(device);
    row.ptr = text(ptr);
    row.attr = text(attr);
    row.stack_python = text(stack_python);
    row.stack_c = text(stack_c);
    row.timestamp = number(timestamp);
    row.pid = number(pid);
    row.tid = number(tid);
    MemEvent& added = out->events.emplace_back();
    if (decoder.decode(row, &added, problem)) return true;
    out->events.pop_back();
    return false;
  };
  return for_each_csv_row(csv, header, path, problems, decode, error);
}

}  // namespace memtap::reader
