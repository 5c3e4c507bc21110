// The rows of a memscope_dump / leaks_dump table decoded into events.
//
// The query is planned from the columns the table has (pragma_table_info; only `Event`
// and `Timestamp(ns)` are required), then run over all rows or over a range of rowids, so
// several threads can each decode a part of a large file (sqlite_dump_source.cpp).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "monitor/model/mem_event.h"
#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"
#include "monitor/store/reader/sqlite_access.h"

namespace memtap::reader {

enum DumpColumn {
  kColId,
  kColEvent,
  kColEventType,
  kColName,
  kColTimestamp,
  kColPid,
  kColTid,
  kColDevice,
  kColPtr,
  kColAttr,
  kColStackPython,
  kColStackC,
  kDumpColumnCount
};

struct DumpQuery {
  std::string table;
  std::string select;                      // SELECT <the columns present>, rowid FROM "<table>"
  std::string timestamp;                   // the timestamp column, quoted
  std::array<int, kDumpColumnCount> at{};  // result position of each column; -1: absent
  int rowid_at = 0;
  // Whether SQL compares these columns' values as numbers (declared INTEGER, as memtap and
  // msMemScope declare them): only then can a RecordingFilter go into the query.
  bool timestamp_integer = false;
  std::string pid;  // the Process Id column, quoted; "" when the table has none
  bool pid_integer = false;
};

// Plans the query for `table`; without `names_and_stacks`, Name and the call stacks are
// left out as if absent. False with *error naming the missing column and the columns the
// table has.
bool plan_dump_query(const std::string& path, sqlite3* db, const std::string& table,
                     DumpQuery* query, std::string* error, bool names_and_stacks = true);

// The unit factor of the table's timestamps (TimestampUnit::factor_for) from its first
// positive one in file order; 0 if it has none.
bool dump_timestamp_factor(const std::string& path, sqlite3* db, const DumpQuery& query,
                           int64_t* factor, std::string* error);

struct DumpScan {
  bool time_order = false;  // ORDER BY the timestamp (then rowid); else rowid order
  bool whole_table = true;  // else only rowids in [first_rowid, last_rowid]
  int64_t first_rowid = 0;
  int64_t last_rowid = 0;
  int64_t ts_factor = 0;
  // Optional: called whenever *events holds batch_events or more; false stops the scan.
  std::function<bool()> drain;
  size_t batch_events = 0;
  // Rows whose events it does not pass are left out: in the query where the columns allow
  // (DumpQuery), else after decoding.
  RecordingFilter filter;
  // A time slice of the table (raw timestamp units; only where timestamp_integer): the rows
  // whose timestamp is NULL, or those at or after / before a bound. SQL orders NULL first
  // and text after every number, so slices [NULL], [.., a), [a, b), .., [z, ..] read one
  // after the other give every row once, in the order of one time-ordered scan.
  bool ts_null_only = false;
  std::optional<int64_t> ts_at_least;
  std::optional<int64_t> ts_below;
  // Where the rows visited are counted (ReadProgress::rows_read); null: nowhere.
  std::atomic<uint64_t>* rows_read = nullptr;
};

// Appends the decoded rows to *events (strings interned into *strings), counting rows and
// skipped ones in *problems. False with *error when SQLite fails mid-way (corruption).
bool scan_dump_rows(const std::string& path, sqlite3* db, const DumpQuery& query,
                    const DumpScan& scan, std::vector<MemEvent>* events, StringTable* strings,
                    RowProblems* problems, std::string* error);

}  // namespace memtap::reader
