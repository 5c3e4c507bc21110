// The multi-row INSERT both row inserters write their batches with.
//
// SQLite's work per statement (running its program's prologue, opening the table's cursor,
// halting, resetting) falls on every row of a one-row INSERT; one statement of many rows
// pays it once for all of them.
#pragma once

#include <string>
#include <string_view>

namespace memtap {

// `INSERT INTO <table> VALUES (?, ...), ...`: `rows` rows of `columns` parameters each;
// row r's column c is parameter r * columns + c + 1. `table` is spelled as given (quote it
// when it needs quotes).
std::string batch_insert_sql(std::string_view table, int rows, int columns);

}  // namespace memtap
