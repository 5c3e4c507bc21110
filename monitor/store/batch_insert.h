// The multi-row INSERT both row inserters write their batches with, and the IDs they give
// their rows.
//
// SQLite's work per statement (running its program's prologue, opening the table's cursor,
// halting, resetting) falls on every row of a one-row INSERT; one statement of many rows
// pays it once for all of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace memtap {

// `INSERT INTO <table> VALUES (?, ...), ...`: `rows` rows of `columns` parameters each;
// row r's column c is parameter r * columns + c + 1. `table` is spelled as given (quote it
// when it needs quotes).
std::string batch_insert_sql(std::string_view table, int rows, int columns);

// The IDs (INTEGER PRIMARY KEY) of the rows one connection writes into a table, in order.
class RowIds {
 public:
  // Binds `id` as parameter `param` of `stmt`: as NULL when it is one past the previous
  // row's, so that SQLite takes the largest ID plus one, which it knows from the statement's
  // cursor, instead of searching the table for the given ID to see whether it is taken (a
  // quarter of a row's cost).
  void bind(sqlite3_stmt* stmt, int param, int64_t id);
  // Runs `stmt`, resets it, and checks that SQLite gave the last row bound the ID asked for.
  // SQLite's result code: SQLITE_DONE on success, SQLITE_INTERNAL if the ID differs.
  int step(sqlite3* db, sqlite3_stmt* stmt) const;

 private:
  int64_t last_ = INT64_MIN;  // the ID of the last row bound
};

}  // namespace memtap
