// The one prepared INSERT into `memscope_dump`, and the buffers its text parameters point at.
//
// Constant columns (Name, both call stacks) are bound once: sqlite3_reset keeps bindings.
// Ptr and Attr are formatted into buffers owned here and bound with SQLITE_STATIC, so
// SQLite copies each value once, into the record, and no heap allocation happens per row.
// That is why the object is not copyable or movable: the statement holds pointers into it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "monitor/engine/dump_row.h"
#include "monitor/store/memscope_format.h"

struct sqlite3;
struct sqlite3_stmt;

namespace memtap {

class DumpInserter {
 public:
  // Prepares the INSERT on `db`. On failure returns nullptr and sets *error.
  static std::unique_ptr<DumpInserter> prepare(sqlite3* db, std::string* error);
  ~DumpInserter();
  DumpInserter(const DumpInserter&) = delete;
  DumpInserter& operator=(const DumpInserter&) = delete;

  // Writes one row with `ID` = id. Returns SQLite's result code: SQLITE_DONE on success.
  int insert(int64_t id, const DumpRow& row);

 private:
  explicit DumpInserter(sqlite3_stmt* stmt);

  sqlite3_stmt* stmt_;
  PtrText ptr_{};
  AttrText attr_{};
};

}  // namespace memtap
