// Reading SQLite files for the reader: handles that close themselves, queries run row by
// row, and failures worded once ("<path>: corrupt or truncated SQLite database (...)").
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <vector>

#include "monitor/store/sqlite_rows.h"

namespace memtap::reader {

// The store's (sqlite_rows.h), under the names the readers use.
using memtap::column_string;
using memtap::DbHandle;
using memtap::Statement;

// "<path>: corrupt or truncated SQLite database (<sqlite_error_text>)" for SQLITE_CORRUPT
// and SQLITE_NOTADB; for a hot rollback journal, which only a read-write open rolls back,
// what to run (a memtap `.partial`: `memtap recover`, killed while it built the indexes);
// "<path>: cannot read the SQLite database (...)" otherwise.
std::string sqlite_failure(const std::string& path, sqlite3* db, int rc);

// Checks the file's length against its header's page count: a copy cut short still
// opens, and may even read its first rows, so SQLite alone would not always say.
bool check_sqlite_length(const std::string& path, std::string* error);

// sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | extra_flags), as every reader of a
// recording opens one, and SQLite's result. A recording in WAL mode whose log is gone (its
// writer closed cleanly, or had not written yet) still needs a -shm file to be read, and
// where none can be made (a full disk, a read-only file system or directory) SQLite refuses
// with an I/O error: such a file holds every page itself, and it is then opened immutable,
// as SQLite documents for read-only media. *db is set even on failure, as SQLite's is.
int open_read_only(const std::string& path, int extra_flags, sqlite3** db);

// Opens `path` read-only for one reader thread (open_read_only). False with *error.
bool open_for_reading(const std::string& path, DbHandle* handle, std::string* error);

// Runs `sql` and calls `row(stmt)` for each result row. False with *error (sqlite_failure)
// on failure.
template <typename Row>
bool for_each_row(const std::string& path, sqlite3* db, const std::string& sql, Row row,
                  std::string* error) {
  return memtap::for_each_row(db, sql, row, error,
                              [&](int rc) { return sqlite_failure(path, db, rc); });
}

// "name" with inner quotes doubled.
std::string quote_identifier(const std::string& name);

// Names joined with ", " (for messages; each printable_for_message: a file's names may hold
// any bytes).
std::string join_names(const std::vector<std::string>& names);

// The names of `table`'s columns (pragma_table_info), in table order, and when `types` is
// given their declared types ("" for none). `table` must be one of the reader's own table
// names (it is not quoted).
bool table_columns(const std::string& path, sqlite3* db, const std::string& table,
                   std::vector<std::string>* columns, std::string* error,
                   std::vector<std::string>* types = nullptr);

// Position of `name` in `columns`, ignoring case; -1 if absent.
int find_column(const std::vector<std::string>& columns, std::string_view name);

}  // namespace memtap::reader
