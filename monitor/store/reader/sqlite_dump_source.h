// msMemScope's database, and memtap's (the same dump table plus memtap_session/memtap_meta).
//
// The dump table is `memscope_dump`, or `leaks_dump` in files older than msMemScope's
// rename; its columns are probed (pragma_table_info) and looked up by name, so a file
// without the optional ones (ID, names, stacks...) still reads: only `Event` and
// `Timestamp(ns)` are required. Rows decode as in dump_row_decoder.h. `memtap_session`,
// when present, gives the processes (one per pid; a pid that exec'd has several rows, and
// the last describes what it became).
//
// A file with memtap's compact tables (memtap_format, memtap_event: compact_schema.h) is read
// from them directly (compact_table_scan.h), not through its memscope_dump view; its format
// is still reported as memscope_dump, the table the user knows.
//
// A damaged file is an error, not a short read: the header's page count is checked against
// the file's size first (a truncated copy), and any SQLite failure while reading names the
// result code (SQLITE_CORRUPT, SQLITE_NOTADB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"

namespace memtap::reader {

struct SqliteReadOptions {
  // Ask SQLite for the rows in time order (then file order): streaming needs it, and the
  // timestamp index msMemScope and memtap create makes it cheap. Otherwise table order.
  bool time_order = false;
  // When set, called each time out->events holds batch_events or more; it takes them
  // (and clears out->events). Returning false stops the read (not an error).
  std::function<bool()> drain;
  size_t batch_events = 0;
  // File order: a large table is decoded by several threads, each a range of rowids on its
  // own connection. 0: one per core, at most 8. Tests set these to force a split.
  unsigned max_threads = 0;
  int64_t min_rows_per_thread = 250'000;
  // Time order with a drain: a large table with a timestamp index is read by several
  // threads, each a slice of time (time_slices.h) of about this many rows.
  int64_t min_rows_per_slice = 500'000;
  // Only the events this lets through (see DumpScan::filter).
  RecordingFilter filter;
  // Counts the rows visited, and (reading the whole table) how many there are; null: no
  // one asks.
  ReadProgress* progress = nullptr;
};

// Appends the dump table's events to out->events and sets out->format to the table's name;
// fills out->processes from memtap_session when the file has one.
bool read_sqlite_recording(const std::string& path, const SqliteReadOptions& options,
                           Recording* out, RowProblems* problems, std::string* error);

}  // namespace memtap::reader
