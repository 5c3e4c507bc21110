// A time-ordered read of a large dump table, split over threads by time.
//
// Streaming a recording (the window's replay, `report --low-memory`) reads it in time order
// through the timestamp index: one thread doing SQLite's work and the decoding, which made
// that thread the whole load's critical path while the other cores idled. Here the
// timestamp range is cut into slices (NULLs first, text last, as SQLite orders them); each
// worker reads a slice in time order on its own connection with its own strings, and the
// caller's thread hands the slices on in order, their string ids rewritten into the
// recording's. The events and their order are those of the one-thread read; what a worker
// reads ahead of the slice being handed on is bounded (two batches a slice).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "monitor/store/reader/dump_table_scan.h"
#include "monitor/store/reader/sqlite_dump_source.h"

namespace memtap::reader {

// Reads the table as read_sqlite_recording would with options.time_order and
// options.drain. *used is false, with nothing read, where slicing does not apply: a
// timestamp column SQL does not compare as numbers, no index on it, fewer than two slices'
// worth of rows (options.min_rows_per_slice), one core or options.max_threads 1, or no
// thread to be had. False with *error when a slice cannot be read.
bool read_time_slices(const std::string& path, sqlite3* db, const DumpQuery& query,
                      int64_t ts_factor, const SqliteReadOptions& options, Recording* out,
                      RowProblems* problems, bool* used, std::string* error);

}  // namespace memtap::reader
