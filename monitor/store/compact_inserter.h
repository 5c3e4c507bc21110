// The prepared INSERTs of a compact recording (compact_schema.h): a memtap_event row per
// memscope_dump row, with memtap_thread and memtap_string filled as rows first use a thread
// or a string, memtap_event_chunk every kEventChunkRows rows, memtap_event_stream for the
// blocks that have a stream, memtap_event_pool for the framework pool's blocks, and
// `python_trace_{pid}` rows through a TraceInserter.
//
// Rows are integers only, bound straight from the DumpRow: no text is formatted per row
// (the memscope_dump view spells them when someone reads it). memtap_event rows go in
// kBatchRows at a time through one multi-row INSERT, so SQLite's work per statement (running
// its program's prologue, opening the table's cursor, halting, resetting) falls on 32 rows
// instead of one: with 13 integer columns that was most of a row's cost (with the IDs
// SQLite assigns, see write_rows, the recorder went from 1.22 to 1.88 M rows/s,
// tests/bench/RESULTS.md). Rows wait here until the batch is
// full or flush() runs, which the writer calls before every commit. Not copyable or
// movable: the trace statements bind the strings kept here with SQLITE_STATIC.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "monitor/model/dump_row.h"
#include "monitor/store/batch_insert.h"
#include "monitor/store/trace_inserter.h"

struct sqlite3;
struct sqlite3_stmt;

namespace memtap {

class CompactInserter {
 public:
  // Prepares the INSERTs on `db`, whose compact tables exist. On failure returns nullptr
  // and sets *error.
  static std::unique_ptr<CompactInserter> prepare(sqlite3* db, std::string* error);
  ~CompactInserter();
  CompactInserter(const CompactInserter&) = delete;
  CompactInserter& operator=(const CompactInserter&) = delete;

  // Session string `id` is `text` (the Session's StringSink): a memtap_string row. Ids the
  // rows use must be defined first; an id never defined reads as empty text. Returns
  // SQLite's result code: SQLITE_DONE on success.
  int define_string(uint32_t id, std::string_view text);

  // Adds one memtap_event row with `ID` = id (and writes its thread's memtap_thread row the
  // first time; the first row also sets memtap_format.timestamp_base_ns to its time). IDs
  // must grow. The row is written with its batch: by this call when it completes one, else
  // by flush(). Returns SQLite's result code: SQLITE_DONE on success; an error is the
  // batch's, whose rows are then all unwritten.
  int insert(int64_t id, const DumpRow& row);

  // Writes the rows still waiting for their batch and the memtap_event_chunk row of the
  // chunk the last row is in, complete or not, so a reader of the file finds every row by
  // time. Called before each commit. Returns SQLite's result code: SQLITE_DONE on success.
  int flush();

  // Rows added and not yet written (tests).
  int pending_rows() const { return pending_count_; }
  static constexpr int kBatchRows = 32;

  // Writes a DumpEvent::kTraceSlice row into `python_trace_{pid}` (trace_inserter.h).
  int insert_trace_slice(const DumpRow& row) { return traces_.insert(row, text(row.name)); }

 private:
  static constexpr int kColumns = 13;  // memtap_event's
  using EventValues = std::array<int64_t, kColumns>;

  explicit CompactInserter(sqlite3* db) : db_(db) {}
  // Writes the pending rows: a full batch in one statement, fewer one by one.
  int write_pending();
  // Binds pending_[first, first + count) to `stmt` (count rows' parameters) and runs it.
  int write_rows(sqlite3_stmt* stmt, int first, int count);
  int write_chunk();
  const std::string& text(uint32_t id) const;
  // memtap_thread's number for (pid, tid), inserting its row on first use; -1 after an
  // error, with *rc set.
  int64_t thread_number(uint32_t pid, uint32_t tid, int* rc);

  sqlite3* db_;
  sqlite3_stmt* event_ = nullptr;        // one row: what is left of a batch at flush()
  sqlite3_stmt* event_batch_ = nullptr;  // kBatchRows rows
  sqlite3_stmt* thread_ = nullptr;
  sqlite3_stmt* string_ = nullptr;
  sqlite3_stmt* chunk_ = nullptr;
  sqlite3_stmt* base_ = nullptr;
  sqlite3_stmt* stream_ = nullptr;  // memtap_event_stream
  sqlite3_stmt* pool_ = nullptr;    // memtap_event_pool
  bool have_base_ = false;
  int64_t timestamp_base_ns_ = 0;
  std::unordered_map<uint64_t, int64_t> threads_;  // (pid << 32 | tid) -> memtap_thread
  uint64_t last_thread_key_ = ~uint64_t{0};        // the previous row's: most rows repeat it
  int64_t last_thread_ = -1;
  // The chunk being filled: its first ID and smallest offset so far (-1: none yet).
  int64_t chunk_first_id_ = -1;
  int64_t chunk_min_offset_ = 0;
  std::array<EventValues, kBatchRows> pending_{};  // rows waiting for their batch
  int pending_count_ = 0;
  RowIds ids_;                                      // memtap_event's
  std::deque<std::string> strings_{std::string()};  // by session id; never move
  TraceInserter traces_{db_};
};

}  // namespace memtap
