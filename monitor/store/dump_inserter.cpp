// The prepared INSERT into `memscope_dump` (see dump_inserter.h).
#include "monitor/store/dump_inserter.h"

#include <sqlite3.h>

#include <string_view>

#include "monitor/store/memscope_schema.h"
#include "monitor/store/sqlite_status.h"

namespace memtap {
namespace {

// Parameter numbers, in the column order of kCreateMemscopeDumpSql.
enum Param : int {
  kId = 1,
  kEvent,
  kEventType,
  kName,
  kTimestamp,
  kProcessId,
  kThreadId,
  kDeviceId,
  kPtr,
  kAttr,
  kCallStackPython,
  kCallStackC,
};

// Every text bound here is a string literal or a buffer in DumpInserter that outlives the
// next sqlite3_step, which is what SQLITE_STATIC requires. Empty texts come from "" literals,
// whose data() is not null: SQLite would bind a null pointer as NULL, and msMemScope's
// empty columns are '' (readers test `Attr = ''`).
int bind_static(sqlite3_stmt* stmt, int param, std::string_view text) {
  return sqlite3_bind_text(stmt, param, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

}  // namespace

std::unique_ptr<DumpInserter> DumpInserter::prepare(sqlite3* db, std::string* error) {
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v3(db, kInsertMemscopeDumpSql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    if (error != nullptr) *error = "preparing the row INSERT: " + sqlite_error_text(db, rc);
    sqlite3_finalize(stmt);
    return nullptr;
  }
  bind_static(stmt, kName, kDumpNameText);
  bind_static(stmt, kCallStackPython, kDumpCallStackText);
  bind_static(stmt, kCallStackC, kDumpCallStackText);
  return std::unique_ptr<DumpInserter>(new DumpInserter(stmt));
}

DumpInserter::DumpInserter(sqlite3_stmt* stmt) : stmt_(stmt) {}

DumpInserter::~DumpInserter() {
  sqlite3_finalize(stmt_);
}

int DumpInserter::insert(int64_t id, const DumpRow& row) {
  sqlite3_bind_int64(stmt_, kId, id);
  bind_static(stmt_, kEvent, dump_event_text(row.event));
  bind_static(stmt_, kEventType, dump_event_type_text(row.event_type));
  sqlite3_bind_int64(stmt_, kTimestamp, row.timestamp_ns);
  sqlite3_bind_int64(stmt_, kProcessId, row.process_id);
  sqlite3_bind_int64(stmt_, kThreadId, row.thread_id);
  bind_static(stmt_, kDeviceId, dump_device_id_text(row.event));
  bind_static(stmt_, kPtr, dump_ptr_text(row, ptr_));
  bind_static(stmt_, kAttr, dump_attr_text(row, attr_));
  const int rc = sqlite3_step(stmt_);
  sqlite3_reset(stmt_);
  return rc;
}

}  // namespace memtap
