// See batch_insert.h.
#include "monitor/store/batch_insert.h"

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

}  // namespace memtap
