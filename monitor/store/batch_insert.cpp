// See batch_insert.h.
#include "monitor/store/batch_insert.h"

#include <sqlite3.h>

namespace memtap {

std::string batch_insert_sql(std::string_view table, int rows, int columns) {
  std::string one = "(?";
  for (int c = 1; c < columns; ++c) one += ", ?";
  one += ")";
  std::string sql = "INSERT INTO ";
  sql += table;
  sql += " VALUES ";
  for (int r = 0; r < rows; ++r) sql += (r == 0 ? "" : ", ") + one;
  return sql;
}

void RowIds::bind(sqlite3_stmt* stmt, int param, int64_t id) {
  if (id == last_ + 1) {
    sqlite3_bind_null(stmt, param);
  } else {
    sqlite3_bind_int64(stmt, param, id);
  }
  last_ = id;
}

int RowIds::step(sqlite3* db, sqlite3_stmt* stmt) const {
  const int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  if (rc != SQLITE_DONE) return rc;
  // Only this connection writes the table, so the IDs cannot differ; if they ever did, the
  // recording would be wrong silently: stop it with an error instead.
  return sqlite3_last_insert_rowid(db) == last_ ? SQLITE_DONE : SQLITE_INTERNAL;
}

}  // namespace memtap
