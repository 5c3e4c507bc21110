// msMemScope's CSV export (memscope_dump_<time>.csv), written from DumpRows:
//   ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,
//   Call Stack(Python),Call Stack(C)
// Every column is the text memtap's writer puts in the database (memscope_format.h), except
// Attr: msMemScope's CSV spells it `{key:value,...}` without JSON's quotes
// (`{allocation_id:4,addr:0x000012c041400000,size:16778240,total:20971520,used:16780288}`,
// the field quoted for its commas), and its own tools find a value by searching for `key:`.
// So the members of memtap's JSON Attr are written that way, in their order; a value that
// would end early there (one holding `,` `}` `"` or `:`, an owner label or an API name at
// most) keeps its JSON quotes, which memtap's reader takes (reader/attr_parser.h). Call
// stacks keep their line breaks inside their quoted field, as RFC 4180 allows.
#pragma once

#include <memory>
#include <string>

#include "monitor/model/dump_row.h"
#include "monitor/model/mem_event.h"
#include "monitor/store/export/text_file.h"

namespace memtap {

class DumpCsvWriter {
 public:
  // Creates `path` and writes the header. nullptr with *error naming it.
  static std::unique_ptr<DumpCsvWriter> create(const std::string& path, std::string* error);

  // Appends `row` with the next ID (1, 2, ...); its string ids are ids of `strings`.
  void add(const DumpRow& row, const StringTable& strings);
  // False with *error naming the file.
  bool close(std::string* error) { return file_->close(error); }

 private:
  explicit DumpCsvWriter(std::unique_ptr<TextFile> file) : file_(std::move(file)) {}
  std::unique_ptr<TextFile> file_;
  int64_t next_id_ = 1;
  std::string line_, attr_spill_, csv_attr_;
};

// memtap's JSON Attr text (dump_attr_text) as msMemScope's CSV spells it (above); "" stays "".
std::string msmemscope_csv_attr(std::string_view json_attr);

}  // namespace memtap
