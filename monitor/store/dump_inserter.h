// The prepared INSERT of msMemScope's text rows (`memscope_dump`), the session strings their
// text comes from, and the buffers their text parameters point at; `python_trace_{pid}` rows
// go through a TraceInserter. (compact_inserter.h writes the same rows as integers.)
//
// Rows go in kBatchRows at a time through one multi-row INSERT (batch_insert.h), as compact
// rows do: SQLite's work per statement had been a quarter of a text row's cost. Rows wait
// here until their batch is full or flush() runs, which the writer calls before every
// commit.
//
// Ptr and Attr are formatted into buffers owned here, one set per row of a batch, and bound
// with SQLITE_STATIC, so SQLite copies each value once, into the record, and no heap
// allocation happens per row. Name, the call stacks, Event, Event Type, Device Id and the
// process and thread ids are bound only when they differ from what the same row of the
// statement had last time (sqlite3_reset keeps bindings: 1.8 -> 2.0 M rows/s, 5 % less
// CPU, `memtap_bench_recorder 2000000 text`), and point at the strings kept here, which
// never move. That is why the object is not copyable or movable: the statements hold
// pointers into it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "monitor/model/dump_row.h"
#include "monitor/store/batch_insert.h"
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

  // Adds one memscope_dump row with `ID` = id; IDs must grow. The row is written with its
  // batch: by this call when it completes one, else by flush(). Returns SQLite's result code:
  // SQLITE_DONE on success; an error is the batch's, whose rows are then all unwritten.
  int insert(int64_t id, const DumpRow& row);
  // Writes the rows still waiting for their batch, one by one. Returns SQLite's result code:
  // SQLITE_DONE on success.
  int flush();
  // Rows added and not yet written (tests).
  int pending_rows() const { return pending_count_; }
  static constexpr int kBatchRows = 32;

  // Writes a DumpEvent::kTraceSlice row into `python_trace_{pid}` (trace_inserter.h).
  int insert_trace_slice(const DumpRow& row) { return traces_.insert(row, text(row.name)); }

 private:
  static constexpr uint32_t kNothingBound = 0xffffffffu;
  static constexpr uint32_t kStepBound = 0xfffffffeu;
  // One row's place in a statement: the buffers its text parameters point at, and what its
  // Name and stacks are bound to now (a session id; kStepBound: step).
  struct Slot {
    PtrText ptr{};
    AttrText attr{};
    DeviceText device{};
    StepText step{};
    std::string attr_spill;  // Attr with an owner; keeps its capacity from row to row
    std::string func_json;   // an OOM_TRIGGER's API, escaped for its Attr
    uint32_t bound_name = kNothingBound;
    uint32_t bound_stack_python = kNothingBound;
    uint32_t bound_stack_c = kNothingBound;
    // Event, Event Type, Device Id, Process Id and Thread Id as bound now: most rows repeat
    // the row before them in these, and a bind costs more than the comparison.
    int bound_event = -1;
    int bound_event_type = -1;
    std::string bound_device;  // "": nothing bound (a Device Id is never empty); no heap
    int64_t bound_process_id = -1;
    int64_t bound_thread_id = -1;
  };
  explicit DumpInserter(sqlite3* db) : db_(db) {}
  const std::string& text(uint32_t id) const;
  std::string_view owner_attr(uint32_t owner);
  // Binds `row` as the row whose parameters start at `first_param` of `stmt` (its ID
  // through ids_).
  void bind_row(sqlite3_stmt* stmt, int first_param, Slot& slot, int64_t id, const DumpRow& row);
  // Writes the pending rows: a full batch in one statement, fewer one by one.
  int write_pending();

  sqlite3* db_;
  sqlite3_stmt* one_ = nullptr;    // one row: what is left of a batch at flush()
  sqlite3_stmt* batch_ = nullptr;  // kBatchRows rows
  Slot one_slot_;
  std::array<Slot, kBatchRows> batch_slots_;
  std::array<std::pair<int64_t, DumpRow>, kBatchRows> pending_{};  // rows waiting, with IDs
  int pending_count_ = 0;
  RowIds ids_;                                      // memscope_dump's
  std::deque<std::string> strings_{std::string()};  // by session id; never move
  std::vector<std::string> owner_attrs_;            // by session id, built on first use
  TraceInserter traces_{db_};
};

}  // namespace memtap
