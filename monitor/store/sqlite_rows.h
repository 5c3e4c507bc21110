// Running SQL row by row, for the store and the readers above it: handles that close
// themselves, each result row handed to a function, text columns as strings.
#pragma once

#include <sqlite3.h>

#include <string>

#include "monitor/store/sqlite_status.h"

namespace memtap {

struct DbHandle {
  sqlite3* db = nullptr;
  DbHandle() = default;
  DbHandle(const DbHandle&) = delete;
  DbHandle& operator=(const DbHandle&) = delete;
  ~DbHandle() { sqlite3_close(db); }
};

struct Statement {
  sqlite3_stmt* stmt = nullptr;
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt); }
};

// Runs `sql` and calls `row(stmt)` for each result row. False on failure, with *error set to
// `words(rc)`, asked while the failed statement still exists (SQLite's message is its).
template <typename Row, typename Words>
bool for_each_row(sqlite3* db, const std::string& sql, Row row, std::string* error, Words words) {
  Statement s;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s.stmt, nullptr);
  while (rc == SQLITE_OK && (rc = sqlite3_step(s.stmt)) == SQLITE_ROW) {
    row(s.stmt);
    rc = SQLITE_OK;
  }
  if (rc == SQLITE_DONE) return true;
  *error = words(rc);
  return false;
}

// The same, with SQLite's own words (sqlite_error_text).
template <typename Row>
bool for_each_row(sqlite3* db, const std::string& sql, Row row, std::string* error) {
  return for_each_row(db, sql, row, error, [db](int rc) { return sqlite_error_text(db, rc); });
}

// Column `index` of the current row as text ("" for NULL).
inline std::string column_string(sqlite3_stmt* stmt, int index) {
  const unsigned char* text = sqlite3_column_text(stmt, index);
  return text != nullptr ? reinterpret_cast<const char*>(text) : "";
}

}  // namespace memtap
