// The rows of a dump table decoded into events (see dump_table_scan.h).
#include "monitor/store/reader/dump_table_scan.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "monitor/store/reader/dump_row_decoder.h"
#include "monitor/store/reader/read_progress.h"
#include "monitor/store/reader/timestamp_unit.h"

namespace memtap::reader {
namespace {

constexpr std::array<const char*, kDumpColumnCount> kColumnNames = {
    "ID",        "Event",     "Event Type", "Name", "Timestamp(ns)",      "Process Id",
    "Thread Id", "Device Id", "Ptr",        "Attr", "Call Stack(Python)", "Call Stack(C)"};

// The current row's columns as the decoder takes them, without copying text.
class RowView {
 public:
  RowView(sqlite3_stmt* stmt, const DumpQuery& query) : stmt_(stmt), query_(query) {}

  std::string_view text(DumpColumn column) const {
    const int at = query_.at[column];
    if (at < 0) return {};
    const unsigned char* p = sqlite3_column_text(stmt_, at);
    if (p == nullptr) return {};
    return {reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(stmt_, at))};
  }
  NumberField number(DumpColumn column) const {
    NumberField field;
    const int at = query_.at[column];
    if (at < 0) return field;
    switch (sqlite3_column_type(stmt_, at)) {
      case SQLITE_NULL:
        return field;
      case SQLITE_INTEGER:
        field.type = NumberField::Type::kInteger;
        field.integer = sqlite3_column_int64(stmt_, at);
        return field;
      default:  // TEXT (a column declared without INTEGER affinity), FLOAT, BLOB
        field.type = NumberField::Type::kText;
        field.text = text(column);
        return field;
    }
  }
  // How a message names the row: by its ID where the table has one.
  std::string where() const {
    const int id = query_.at[kColId];
    if (id >= 0 && sqlite3_column_type(stmt_, id) == SQLITE_INTEGER) {
      return "ID " + std::to_string(sqlite3_column_int64(stmt_, id));
    }
    return "rowid " + std::to_string(sqlite3_column_int64(stmt_, query_.rowid_at));
  }

 private:
  sqlite3_stmt* stmt_;
  const DumpQuery& query_;
};

// SQLite gives a column INTEGER affinity when its declared type contains "INT".
bool integer_affinity(const std::string& declared_type) {
  std::string upper = declared_type;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return char(std::toupper(c)); });
  return upper.find("INT") != std::string::npos;
}

// floor(a / b) for b > 0: the largest raw timestamp that is at most a nanoseconds.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

bool plan_dump_query(const std::string& path, sqlite3* db, const std::string& table,
                     DumpQuery* query, std::string* error, bool names_and_stacks) {
  std::vector<std::string> columns;
  std::vector<std::string> types;
  if (!table_columns(path, db, table, &columns, error, &types)) return false;
  // Attr holds every block's size: without it each figure would read 0 B, not an error.
  for (DumpColumn required : {kColEvent, kColTimestamp, kColAttr}) {
    if (find_column(columns, kColumnNames[required]) < 0) {
      *error = path + ": table " + table + " has no column \"" + kColumnNames[required] +
               "\" (its columns: " + join_names(columns) + ")";
      return false;
    }
  }
  query->table = table;
  std::string list;
  int selected = 0;
  for (int column = 0; column < kDumpColumnCount; ++column) {
    const bool text_column =
        column == kColName || column == kColStackPython || column == kColStackC;
    const int found =
        !names_and_stacks && text_column ? -1 : find_column(columns, kColumnNames[column]);
    query->at[column] = found < 0 ? -1 : selected++;
    if (found >= 0) list += quote_identifier(columns[found]) + ", ";
  }
  query->rowid_at = selected;
  query->select = "SELECT " + list + "rowid FROM " + quote_identifier(table);
  const int timestamp = find_column(columns, kColumnNames[kColTimestamp]);
  query->timestamp = quote_identifier(columns[timestamp]);
  query->timestamp_integer = integer_affinity(types[timestamp]);
  if (const int pid = find_column(columns, kColumnNames[kColPid]); pid >= 0) {
    query->pid = quote_identifier(columns[pid]);
    query->pid_integer = integer_affinity(types[pid]);
  }
  return true;
}

bool dump_timestamp_factor(const std::string& path, sqlite3* db, const DumpQuery& query,
                           int64_t* factor, std::string* error) {
  *factor = 0;
  const std::string sql = "SELECT CAST(" + query.timestamp + " AS INTEGER) FROM " +
                          quote_identifier(query.table) + " WHERE CAST(" + query.timestamp +
                          " AS INTEGER) > 0 ORDER BY rowid LIMIT 1";
  return for_each_row(
      path, db, sql,
      [&](sqlite3_stmt* s) { *factor = TimestampUnit::factor_for(sqlite3_column_int64(s, 0)); },
      error);
}

bool scan_dump_rows(const std::string& path, sqlite3* db, const DumpQuery& query,
                    const DumpScan& scan, std::vector<MemEvent>* events, StringTable* strings,
                    RowProblems* problems, std::string* error) {
  // The filter goes into SQL only where SQL compares as the decoder reads: numbers in a
  // column declared INTEGER. Pid 0 stays out, since the decoder also reads `N/A` as 0.
  // With the timestamp index the planner then walks the index up to the bound.
  const RecordingFilter& filter = scan.filter;
  const bool pid_in_sql = filter.pid && *filter.pid != 0 && query.pid_integer;
  const bool ts_in_sql =
      filter.max_ts_ns != std::numeric_limits<int64_t>::max() && query.timestamp_integer;
  std::string sql = query.select;
  const char* joint = " WHERE ";
  auto where = [&](const std::string& condition) {
    sql += joint + condition;
    joint = " AND ";
  };
  if (!scan.whole_table) where("rowid BETWEEN ?1 AND ?2");
  if (pid_in_sql) where(query.pid + " = ?3");
  if (ts_in_sql) where(query.timestamp + " <= ?4");
  if (scan.ts_null_only) where(query.timestamp + " IS NULL");
  if (scan.ts_at_least) where(query.timestamp + " >= ?5");
  if (scan.ts_below) where(query.timestamp + " < ?6");
  if (scan.time_order) sql += " ORDER BY " + query.timestamp + ", rowid";
  Statement s;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s.stmt, nullptr);
  if (rc == SQLITE_OK && !scan.whole_table) {
    sqlite3_bind_int64(s.stmt, 1, scan.first_rowid);
    sqlite3_bind_int64(s.stmt, 2, scan.last_rowid);
  }
  if (rc == SQLITE_OK && pid_in_sql) sqlite3_bind_int64(s.stmt, 3, *filter.pid);
  if (rc == SQLITE_OK && ts_in_sql) {
    // Raw units: a microsecond file's bound is the last whole microsecond.
    sqlite3_bind_int64(s.stmt, 4,
                       floor_div(filter.max_ts_ns, std::max<int64_t>(scan.ts_factor, 1)));
  }
  if (rc == SQLITE_OK && scan.ts_at_least) sqlite3_bind_int64(s.stmt, 5, *scan.ts_at_least);
  if (rc == SQLITE_OK && scan.ts_below) sqlite3_bind_int64(s.stmt, 6, *scan.ts_below);
  DumpRowDecoder decoder(strings, scan.ts_factor);
  const RowView row(s.stmt, query);
  std::string problem;
  RowCounter counter(scan.rows_read);
  while (rc == SQLITE_OK && (rc = sqlite3_step(s.stmt)) == SQLITE_ROW) {
    rc = SQLITE_OK;
    ++problems->rows;
    counter.row();
    DumpFields fields;
    fields.event = row.text(kColEvent);
    fields.event_type = row.text(kColEventType);
    fields.name = row.text(kColName);
    fields.device = row.text(kColDevice);
    fields.ptr = row.text(kColPtr);
    fields.attr = row.text(kColAttr);
    fields.stack_python = row.text(kColStackPython);
    fields.stack_c = row.text(kColStackC);
    fields.timestamp = row.number(kColTimestamp);
    fields.pid = row.number(kColPid);
    fields.tid = row.number(kColTid);
    MemEvent& event = events->emplace_back();
    if (!decoder.decode(fields, &event, &problem)) {
      events->pop_back();
      skip_row(problems, row.where(), problem);
    } else if (!filter.passes(event)) {
      events->pop_back();  // what the query could not leave out
    }
    if (scan.drain && events->size() >= scan.batch_events && !scan.drain()) return true;
  }
  if (rc == SQLITE_DONE) return true;
  *error = sqlite_failure(path, db, rc) + " after " + std::to_string(problems->rows) + " rows";
  return false;
}

}  // namespace memtap::reader
