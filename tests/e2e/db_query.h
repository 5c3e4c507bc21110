// Read-only queries on a recording through the sqlite3 C API, for the end-to-end tests.
//
// Values keep SQLite's storage class, so a test can check that `Timestamp(ns)` really is
// an INTEGER and `Ptr` really is TEXT, not only that their text looks right.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memtap::e2e {

struct DbValue {
  int type = SQLITE_NULL;  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL
  int64_t integer = 0;     // for SQLITE_INTEGER
  std::string text;        // the value as SQLite renders it as text ("" for NULL)
};

struct DbRows {
  std::vector<std::string> columns;
  std::vector<std::vector<DbValue>> rows;
  // Index of the named column, or -1.
  int column(const std::string& name) const;
};

class DbQuery {
 public:
  // Opens `path` read-only. nullptr with *error when it cannot be opened.
  static std::unique_ptr<DbQuery> open(const std::string& path, std::string* error);
  ~DbQuery();
  DbQuery(const DbQuery&) = delete;
  DbQuery& operator=(const DbQuery&) = delete;

  // Runs one statement with text parameters ?1, ?2, ...; false with *error on failure.
  bool query(const std::string& sql, const std::vector<std::string>& params, DbRows* out,
             std::string* error) const;
  // The first column of the first row as an integer; `fallback` if there is no row or the
  // statement fails.
  int64_t scalar_int(const std::string& sql, int64_t fallback = -1) const;
  // Whether a table of that name exists.
  bool has_table(const std::string& name) const;

 private:
  explicit DbQuery(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// Each process's memtap_session row, a line each (pid, forked_from_pid, bye_received, events
// received, dropped and lost, messages lost, late events, stalls, unmatched frees, how it
// ended): what tells an agent's drop from a loss on the way or in the monitor, for a failed
// check's message.
std::string memtap_session_text(const DbQuery& q);

// The recording's MALLOC rows of `size` bytes, every process's: what a test program that
// allocates a size of its own made, found again.
int64_t mallocs_of_size(const DbQuery& q, int64_t size);

}  // namespace memtap::e2e
