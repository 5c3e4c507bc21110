// python_trace_{pid} rows (see trace_inserter.h).
#include "monitor/store/trace_inserter.h"

#include <sqlite3.h>

#include <charconv>
#include <string>

#include "monitor/store/memscope_schema.h"

namespace memtap {
namespace {

// Parameter numbers of python_trace_insert_sql.
enum TraceParam : int { kFuncInfo = 1, kStartTime, kEndTime, kThreadId, kProcessId };

std::string_view decimal(int64_t value, std::array<char, 20>& out) {
  const auto end = std::to_chars(out.data(), out.data() + out.size(), value).ptr;
  return {out.data(), size_t(end - out.data())};
}

// The texts bound here outlive the next sqlite3_step, which is what SQLITE_STATIC
// requires; an empty one is bound as '' (its data() is never null), as msMemScope writes.
void bind_static(sqlite3_stmt* stmt, int param, std::string_view text) {
  sqlite3_bind_text(stmt, param, text.empty() ? "" : text.data(), static_cast<int>(text.size()),
                    SQLITE_STATIC);
}

}  // namespace

TraceInserter::~TraceInserter() {
  for (auto& entry : inserts_) sqlite3_finalize(entry.second);
}

sqlite3_stmt* TraceInserter::statement(uint32_t pid, int* rc) {
  if (auto it = inserts_.find(pid); it != inserts_.end()) return it->second;
  const std::string table = python_trace_table_name(pid);
  *rc = sqlite3_exec(db_, python_trace_create_sql(table).c_str(), nullptr, nullptr, nullptr);
  if (*rc != SQLITE_OK) return nullptr;
  sqlite3_stmt* stmt = nullptr;
  *rc = sqlite3_prepare_v3(db_, python_trace_insert_sql(table).c_str(), -1,
                           SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (*rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return nullptr;
  }
  inserts_.emplace(pid, stmt);
  return stmt;
}

int TraceInserter::insert(const DumpRow& row, std::string_view func_info) {
  int rc = SQLITE_OK;
  sqlite3_stmt* stmt = statement(row.process_id, &rc);
  if (stmt == nullptr) return rc;
  bind_static(stmt, kFuncInfo, func_info);
  bind_static(stmt, kStartTime, decimal(row.timestamp_ns, start_));
  bind_static(stmt, kEndTime, decimal(row.end_ns, end_));
  sqlite3_bind_int64(stmt, kThreadId, row.thread_id);
  sqlite3_bind_int64(stmt, kProcessId, row.process_id);
  rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  return rc;
}

}  // namespace memtap
