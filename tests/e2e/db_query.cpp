// See db_query.h.
#include "tests/e2e/db_query.h"

namespace memtap::e2e {

int DbRows::column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return int(i);
  return -1;
}

std::unique_ptr<DbQuery> DbQuery::open(const std::string& path, std::string* error) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  if (rc != SQLITE_OK) {
    *error = "cannot open " + path + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return nullptr;
  }
  return std::unique_ptr<DbQuery>(new DbQuery(db));
}

DbQuery::~DbQuery() {
  sqlite3_close(db_);
}

bool DbQuery::query(const std::string& sql, const std::vector<std::string>& params, DbRows* out,
                    std::string* error) const {
  *out = DbRows{};
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    *error = sql + ": " + sqlite3_errmsg(db_);
    return false;
  }
  for (size_t i = 0; i < params.size(); ++i)
    sqlite3_bind_text(stmt, int(i + 1), params[i].c_str(), -1, SQLITE_TRANSIENT);
  const int ncol = sqlite3_column_count(stmt);
  for (int c = 0; c < ncol; ++c) out->columns.push_back(sqlite3_column_name(stmt, c));
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    std::vector<DbValue> row(static_cast<size_t>(ncol));
    for (int c = 0; c < ncol; ++c) {
      DbValue& v = row[size_t(c)];
      v.type = sqlite3_column_type(stmt, c);
      if (v.type == SQLITE_INTEGER) v.integer = sqlite3_column_int64(stmt, c);
      const unsigned char* text = sqlite3_column_text(stmt, c);
      if (text)
        v.text.assign(reinterpret_cast<const char*>(text), size_t(sqlite3_column_bytes(stmt, c)));
    }
    out->rows.push_back(std::move(row));
  }
  bool ok = rc == SQLITE_DONE;
  if (!ok) *error = sql + ": " + sqlite3_errmsg(db_);
  sqlite3_finalize(stmt);
  return ok;
}

int64_t DbQuery::scalar_int(const std::string& sql, int64_t fallback) const {
  DbRows rows;
  std::string error;
  if (!query(sql, {}, &rows, &error) || rows.rows.empty() || rows.rows[0].empty() ||
      rows.rows[0][0].type != SQLITE_INTEGER)
    return fallback;
  return rows.rows[0][0].integer;
}

bool DbQuery::has_table(const std::string& name) const {
  DbRows rows;
  std::string error;
  return query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", {name}, &rows,
               &error) &&
         !rows.rows.empty();
}

std::string memtap_session_text(const DbQuery& q) {
  DbRows rows;
  std::string error;
  if (!q.query("SELECT pid, forked_from_pid, bye_received, events_received, events_dropped, "
               "events_lost, messages_lost, late_events, stalls, unmatched_frees, ended_by "
               "FROM memtap_session",
               {}, &rows, &error)) {
    return "memtap_session: " + error + "\n";
  }
  std::string out;
  for (const auto& row : rows.rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += rows.columns[i] + "=" + row[i].text + (i + 1 < row.size() ? " " : "\n");
    }
  }
  return out;
}

int64_t mallocs_of_size(const DbQuery& q, int64_t size) {
  return q.scalar_int(
      "SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC' AND "
      "CAST(json_extract(Attr, '$.size') AS INTEGER) = " +
      std::to_string(size));
}

}  // namespace memtap::e2e
