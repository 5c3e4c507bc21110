// A recording written from DumpRows into a new file, laid out as MemscopeWriter leaves a
// finished one: msMemScope's memscope_dump table (rows through DumpInserter, so spelled as
// memtap records them) with its indexes, memtap_session and memtap_meta; 16 KiB pages,
// journal mode DELETE. For exports whose input is not already such a database.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "monitor/model/dump_row.h"
#include "monitor/model/mem_event.h"
#include "monitor/model/process_info.h"

namespace memtap {

class DumpDbWriter {
 public:
  // Creates `path` (which must not exist). nullptr with *error naming it.
  static std::unique_ptr<DumpDbWriter> create(const std::string& path, std::string* error);
  ~DumpDbWriter();
  DumpDbWriter(const DumpDbWriter&) = delete;
  DumpDbWriter& operator=(const DumpDbWriter&) = delete;

  // Appends `row` with the next ID (1, 2, ...). Its string ids are ids of `strings`, always
  // the same table, which may have grown since the last call. False with *error.
  bool add(const DumpRow& row, const StringTable& strings, std::string* error);
  // Writes the session tables and the indexes and closes the file. False with *error.
  bool finish(const std::vector<ProcessInfo>& processes,
              const std::vector<std::pair<std::string, std::string>>& meta, std::string* error);

 private:
  struct Impl;
  explicit DumpDbWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtap
