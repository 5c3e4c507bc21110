// The prepared INSERTs of a recording (see dump_inserter.h).
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
  return std::unique_ptr<DumpInserter>(new DumpInserter(db, stmt));
}

DumpInserter::DumpInserter(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

DumpInserter::~DumpInserter() {
  sqlite3_finalize(stmt_);
}

void DumpInserter::define_string(uint32_t id, std::string_view text) {
  while (strings_.size() <= id) strings_.emplace_back();
  // Ids are defined once; should one come again, nothing may stay bound to its old text.
  if (id == bound_name_) bound_name_ = kNothingBound;
  if (id == bound_stack_python_) bound_stack_python_ = kNothingBound;
  if (id == bound_stack_c_) bound_stack_c_ = kNothingBound;
  strings_[id].assign(text);
  if (id < owner_attrs_.size()) owner_attrs_[id].clear();
}

const std::string& DumpInserter::text(uint32_t id) const {
  return id < strings_.size() ? strings_[id] : strings_[0];
}

// Formatted once per owner label: most rows of a training run share a few owners.
std::string_view DumpInserter::owner_attr(uint32_t owner) {
  if (owner == 0 || text(owner).empty()) return {};
  if (owner >= owner_attrs_.size()) owner_attrs_.resize(size_t{owner} + 1);
  std::string& attr = owner_attrs_[owner];
  if (attr.empty()) attr = format_owner_attr(text(owner));
  return attr;
}

int DumpInserter::insert(int64_t id, const DumpRow& row) {
  sqlite3_bind_int64(stmt_, kId, id);
  bind_static(stmt_, kEvent, dump_event_text(row.event));
  bind_static(stmt_, kEventType, dump_event_type_text(row.event_type));
  // A step's Name is its number, in step_: bound anew for every step row.
  const bool step = row.event == DumpEvent::kSystem && row.event_type == DumpEventType::kStep;
  if (step || row.name != bound_name_) {
    bind_static(stmt_, kName, dump_name_text(row, text(row.name), step_));
    bound_name_ = step ? kStepBound : row.name;
  }
  sqlite3_bind_int64(stmt_, kTimestamp, row.timestamp_ns);
  sqlite3_bind_int64(stmt_, kProcessId, row.process_id);
  sqlite3_bind_int64(stmt_, kThreadId, row.thread_id);
  bind_static(stmt_, kDeviceId, dump_device_id_text(row, device_));
  bind_static(stmt_, kPtr, dump_ptr_text(row, ptr_));
  std::string_view func;
  if (row.event == DumpEvent::kOomDetail && row.event_type == DumpEventType::kOomTrigger) {
    func_json_ = json_string_content(text(row.name));  // OOMs are rare: not cached
    func = func_json_;
  }
  bind_static(stmt_, kAttr, dump_attr_text(row, owner_attr(row.owner), attr_, attr_spill_, func));
  if (row.stack_python != bound_stack_python_) {
    bind_static(stmt_, kCallStackPython, text(row.stack_python));
    bound_stack_python_ = row.stack_python;
  }
  if (row.stack_c != bound_stack_c_) {
    bind_static(stmt_, kCallStackC, text(row.stack_c));
    bound_stack_c_ = row.stack_c;
  }
  const int rc = sqlite3_step(stmt_);
  sqlite3_reset(stmt_);
  return rc;
}

}  // namespace memtap
