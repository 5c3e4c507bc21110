// The prepared INSERT of msMemScope's text rows (`memscope_dump`), the session strings their
// text comes from, and the buffers their text parameters point at; `python_trace_{pid}` rows
// go through a TraceInserter. (compact_inserter.h writes the same rows as integers.)
//
// Ptr and Attr are formatted into buffers owned here and bound with SQLITE_STATIC, so
// SQLite copies each value once, into the record, and no heap allocation happens per row.
// Name and the call stacks are bound only when they differ from the previous row's
// (sqlite3_reset keeps bindings), and point at the strings kept here, which never move.
// That is why the object is not copyable or movable: the statements hold pointers into it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/model/dump_row.h"
#include "monitor/store/memscope_format.h"
#include "monitor/store/trace_inserter.h"

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

  // Session string `id` is `text` (the Session's StringSink). Ids the rows use must be
  // defined first; an id never defined reads as empty text.
  void define_string(uint32_t id, std::string_view text);

  // Writes one memscope_dump row with `ID` = id. Returns SQLite's result code: SQLITE_DONE
  // on success.
  int insert(int64_t id, const DumpRow& row);

  // Writes a DumpEvent::kTraceSlice row into `python_trace_{pid}` (trace_inserter.h).
  int insert_trace_slice(const DumpRow& row) { return traces_.insert(row, text(row.name)); }

 private:
  DumpInserter(sqlite3* db, sqlite3_stmt* stmt);
  const std::string& text(uint32_t id) const;
  std::string_view owner_attr(uint32_t owner);

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  PtrText ptr_{};
  AttrText attr_{};
  DeviceText device_{};
  std::string attr_spill_;  // Attr with an owner; keeps its capacity from row to row
  std::string func_json_;   // an OOM_TRIGGER's API, escaped for its Attr
  StepText step_{};
  std::deque<std::string> strings_{std::string()};  // by session id; never move
  std::vector<std::string> owner_attrs_;            // by session id, built on first use
  // What Name and the stacks are bound to now (a session id; kStepBound: step_).
  static constexpr uint32_t kNothingBound = 0xffffffffu;
  static constexpr uint32_t kStepBound = 0xfffffffeu;
  uint32_t bound_name_ = kNothingBound;
  uint32_t bound_stack_python_ = kNothingBound;
  uint32_t bound_stack_c_ = kNothingBound;
  TraceInserter traces_{db_};
};

}  // namespace memtap
