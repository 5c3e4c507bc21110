// Writes a session to SQLite in the msMemScope DB format (docs/design.md §6).
//
// Table `memscope_dump` with msMemScope's columns and text encodings, plus memtap's own
// tables (`memtap_session`: one row per traced process; `memtap_meta`: key/value). Rows
// go in through append() from any one thread and are written by the writer's own thread
// in batched transactions. The file is written under `<path>.partial` and renamed to
// `<path>` only by finish(), so an interrupted recording never looks complete.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "monitor/engine/dump_row.h"
#include "monitor/engine/process_info.h"

namespace memtap {

class MemscopeWriter {
 public:
  // Creates `<path>.partial` (replacing a stale one) with the schema. On failure returns
  // nullptr and sets *error to one line naming the path and the reason.
  static std::unique_ptr<MemscopeWriter> create(const std::string& path, std::string* error);
  ~MemscopeWriter();  // without finish(): stops the thread, leaves `<path>.partial`

  // Queues rows; never blocks on SQLite. IDs are assigned in append order, from 0.
  void append(const DumpRow* rows, size_t count);

  // Waits until every queued row is written, writes memtap_session and memtap_meta
  // (meta pairs are written as given, plus `complete`=`1`), closes the database
  // and renames it to `path`. Returns false and sets *error if anything failed.
  bool finish(const std::vector<ProcessInfo>& processes,
              const std::vector<std::pair<std::string, std::string>>& meta, std::string* error);

  uint64_t rows_written() const;
  uint64_t rows_queued() const;
  const std::string& path() const;

 private:
  MemscopeWriter();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtap
