// See memscope_export.h.
#include "monitor/store/memscope_export.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "monitor/store/memscope_indexes.h"
#include "monitor/store/memscope_schema.h"
#include "monitor/store/sqlite_status.h"

namespace memtap {
namespace {

// `text` as an SQL string literal.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

// name -> CREATE statement of the source's tables whose names match `pattern` (GLOB).
bool source_tables(sqlite3* db, const char* pattern,
                   std::vector<std::pair<std::string, std::string>>* out, std::string* error) {
  sqlite3_stmt* stmt = nullptr;
  const char* sql = "SELECT name, sql FROM src.sqlite_master WHERE type = 'table' AND name GLOB ?1";
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(stmt, 1, pattern, -1, SQLITE_STATIC);
  while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const auto* create = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
    if (name != nullptr && create != nullptr) out->emplace_back(name, create);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(stmt);
  if (rc == SQLITE_DONE) return true;
  *error = "listing its tables: " + sqlite_error_text(db, rc);
  return false;
}

// The dump's name in the source: memscope_dump (table or view), else leaks_dump; "" if none.
std::string source_dump(sqlite3* db) {
  for (const char* name : {"memscope_dump", "leaks_dump"}) {
    const std::string sql =
        std::string(
            "SELECT 1 FROM src.sqlite_master WHERE type IN ('table', 'view') AND name = '") +
        name + "'";
    sqlite3_stmt* stmt = nullptr;
    bool found = false;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
      found = sqlite3_step(stmt) == SQLITE_ROW;
    }
    sqlite3_finalize(stmt);
    if (found) return name;
  }
  return "";
}

bool copy(sqlite3* db, const std::string& in, std::string* error) {
  std::string reason;
  // A file that is no database fails here, at the first read of its schema.
  const std::string attach = "ATTACH DATABASE " + quoted("file:" + in + "?mode=ro") + " AS src";
  if (!sqlite_exec(db, attach.c_str(), &reason)) {
    *error = in + ": " + reason;
    return false;
  }
  const std::string dump = source_dump(db);
  if (dump.empty()) {
    *error = in + ": no memscope_dump or leaks_dump in this SQLite database (not a recording?)";
    return false;
  }
  std::vector<std::pair<std::string, std::string>> traces, session;
  if (!source_tables(db, "python_trace_*", &traces, &reason) ||
      !source_tables(db, "memtap_session", &session, &reason) ||
      !source_tables(db, "memtap_meta", &session, &reason)) {
    *error = in + ": " + reason;
    return false;
  }
  std::string sql = std::string("BEGIN;") + kCreateMemscopeDumpSql +
                    ";INSERT INTO main.memscope_dump SELECT * FROM src.\"" + dump +
                    "\" ORDER BY ID;";
  for (const auto& tables : {traces, session}) {
    for (const auto& [name, create] : tables) {
      sql += create + ";INSERT INTO main.\"" + name + "\" SELECT * FROM src.\"" + name + "\";";
    }
  }
  bool has_meta = false;
  for (const auto& [name, create] : session) has_meta |= name == "memtap_meta";
  // A file without memtap_meta (msMemScope's own) reads as finished; its copy must too,
  // where memtap_meta without `complete` means a recording its monitor did not finish.
  if (!has_meta) {
    sql +=
        "CREATE TABLE memtap_meta (key TEXT PRIMARY KEY, value TEXT);"
        "INSERT INTO memtap_meta VALUES ('complete', '1');";
  }
  sql += "INSERT OR REPLACE INTO memtap_meta VALUES ('exported_from', " + quoted(in) + ");";
  if (!sqlite_exec(db, sql.c_str(), &reason) || !build_memscope_indexes(db, &reason) ||
      !sqlite_exec(db, "COMMIT", &reason)) {
    *error = "copying " + in + ": " + reason;
    return false;
  }
  return true;
}

}  // namespace

bool export_memscope_table(const std::string& in, const std::string& out, std::string* error) {
  std::error_code ec;
  if (std::filesystem::equivalent(in, out, ec)) {
    *error = out + ": the output would replace the input";
    return false;
  }
  if (!std::filesystem::exists(in, ec)) {
    *error = in + ": no such file";
    return false;
  }
  const std::string partial = out + ".partial";
  std::remove(partial.c_str());
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(partial.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nullptr);
  std::string reason;
  bool ok = rc == SQLITE_OK;
  if (!ok) {
    *error = "cannot create " + partial + ": " + sqlite_error_text(db, rc);
  } else {
    // 16 KiB pages as memtap writes; no journal while copying: an interrupted copy is a
    // .partial nobody reads.
    ok = sqlite_exec(db, "PRAGMA page_size=16384; PRAGMA journal_mode=OFF", &reason);
    if (!ok) *error = partial + ": " + reason;
  }
  ok = ok && copy(db, in, error);
  if (ok) {
    ok = sqlite_exec(db, "DETACH DATABASE src; PRAGMA journal_mode=DELETE", &reason);
    if (!ok) *error = partial + ": " + reason;
  }
  rc = sqlite3_close(db);
  if (ok && rc != SQLITE_OK) {
    *error = partial + ": closing: " + sqlite_error_text(db, rc);
    ok = false;
  }
  if (!ok) {
    std::remove(partial.c_str());
    return false;
  }
  if (std::rename(partial.c_str(), out.c_str()) != 0) {
    *error = "renaming " + partial + " to " + out + ": " + std::strerror(errno);
    std::remove(partial.c_str());
    return false;
  }
  return true;
}

}  // namespace memtap
