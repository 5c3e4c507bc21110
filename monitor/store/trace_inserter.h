// The rows of msMemScope's Python tracer tables, `python_trace_{pid}`: one table per traced
// process, created on its first slice, with its INSERT prepared once.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "monitor/model/dump_row.h"

struct sqlite3;
struct sqlite3_stmt;

namespace memtap {

class TraceInserter {
 public:
  explicit TraceInserter(sqlite3* db) : db_(db) {}
  ~TraceInserter();
  TraceInserter(const TraceInserter&) = delete;
  TraceInserter& operator=(const TraceInserter&) = delete;

  // Writes a DumpEvent::kTraceSlice row whose FuncInfo is `func_info`. Returns
  // SQLITE_DONE on success, or SQLite's error code.
  int insert(const DumpRow& row, std::string_view func_info);

 private:
  sqlite3_stmt* statement(uint32_t pid, int* rc);

  sqlite3* db_;
  std::unordered_map<uint32_t, sqlite3_stmt*> inserts_;  // by pid
  // The times as text (msMemScope's columns are TEXT); bound with SQLITE_STATIC.
  std::array<char, 20> start_{};
  std::array<char, 20> end_{};
};

}  // namespace memtap
