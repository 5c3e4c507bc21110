// The prepared INSERTs of a recording (see dump_inserter.h).
#include "monitor/store/dump_inserter.h"

#include <sqlite3.h>

#include <string_view>

#include "monitor/store/batch_insert.h"
#include "monitor/store/memscope_schema.h"
#include "monitor/store/sqlite_status.h"

namespace memtap {
namespace {

// Parameter numbers of a row's columns, in the column order of kCreateMemscopeDumpSql,
// after the rows before it in the statement.
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
  kColumns = kCallStackC,
};

// Every text bound here is a string literal or a buffer in DumpInserter that outlives the
// statement's next sqlite3_step, which is what SQLITE_STATIC requires. Empty texts come from ""
// literals, whose data() is not null: SQLite would bind a null pointer as NULL, and msMemScope's
// empty columns are '' (readers test `Attr = ''`).
int bind_static(sqlite3_stmt* stmt, int param, std::string_view text) {
  return sqlite3_bind_text(stmt, param, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

}  // namespace

std::unique_ptr<DumpInserter> DumpInserter::prepare(sqlite3* db, std::string* error) {
  std::unique_ptr<DumpInserter> inserter(new DumpInserter(db));
  int rc = sqlite3_prepare_v3(db, kInsertMemscopeDumpSql, -1, SQLITE_PREPARE_PERSISTENT,
                              &inserter->one_, nullptr);
  if (rc == SQLITE_OK) {
    const std::string sql = batch_insert_sql("\"memscope_dump\"", kBatchRows, kColumns);
    rc = sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &inserter->batch_,
                            nullptr);
  }
  if (rc != SQLITE_OK) {
    if (error != nullptr) *error = "preparing the row INSERT: " + sqlite_error_text(db, rc);
    return nullptr;
  }
  return inserter;
}

DumpInserter::~DumpInserter() {
  sqlite3_finalize(one_);
  sqlite3_finalize(batch_);
}

void DumpInserter::define_string(uint32_t id, std::string_view text) {
  while (strings_.size() <= id) strings_.emplace_back();
  // Ids are defined once; should one come again, nothing may stay bound to its old text.
  auto unbind = [id](Slot& slot) {
    if (id == slot.bound_name) slot.bound_name = kNothingBound;
    if (id == slot.bound_stack_python) slot.bound_stack_python = kNothingBound;
    if (id == slot.bound_stack_c) slot.bound_stack_c = kNothingBound;
  };
  unbind(one_slot_);
  for (Slot& slot : batch_slots_) unbind(slot);
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
  pending_[pending_count_++] = {id, row};
  return pending_count_ == kBatchRows ? write_pending() : SQLITE_DONE;
}

int DumpInserter::flush() {
  return write_pending();
}

int DumpInserter::write_pending() {
  const int count = pending_count_;
  // Unwritten after an error too: the writer rolls the transaction back and stops.
  pending_count_ = 0;
  if (count == kBatchRows) {
    for (int r = 0; r < count; ++r) {
      bind_row(batch_, r * kColumns, batch_slots_[r], pending_[r].first, pending_[r].second);
    }
    return ids_.step(db_, batch_);
  }
  for (int r = 0; r < count; ++r) {
    bind_row(one_, 0, one_slot_, pending_[r].first, pending_[r].second);
    const int rc = ids_.step(db_, one_);
    if (rc != SQLITE_DONE) return rc;
  }
  return SQLITE_DONE;
}

void DumpInserter::bind_row(sqlite3_stmt* stmt, int first_param, Slot& slot, int64_t id,
                            const DumpRow& row) {
  const int p = first_param;
  ids_.bind(stmt, p + kId, id);
  if (int(row.event) != slot.bound_event) {
    bind_static(stmt, p + kEvent, dump_event_text(row.event));
    slot.bound_event = int(row.event);
  }
  if (int(row.event_type) != slot.bound_event_type) {
    bind_static(stmt, p + kEventType, dump_event_type_text(row.event_type));
    slot.bound_event_type = int(row.event_type);
  }
  // A step's Name is its number, in the slot's step: bound anew for every step row.
  const bool step = row.event == DumpEvent::kSystem && row.event_type == DumpEventType::kStep;
  if (step || row.name != slot.bound_name) {
    bind_static(stmt, p + kName, dump_name_text(row, text(row.name), slot.step));
    slot.bound_name = step ? kStepBound : row.name;
  }
  sqlite3_bind_int64(stmt, p + kTimestamp, row.timestamp_ns);
  if (row.process_id != slot.bound_process_id) {
    sqlite3_bind_int64(stmt, p + kProcessId, row.process_id);
    slot.bound_process_id = row.process_id;
  }
  if (row.thread_id != slot.bound_thread_id) {
    sqlite3_bind_int64(stmt, p + kThreadId, row.thread_id);
    slot.bound_thread_id = row.thread_id;
  }
  // Static text ("cpu", "N/A") or the slot's own buffer, rewritten with the same bytes when
  // the bind is skipped: SQLite keeps the pointer (SQLITE_STATIC).
  const std::string_view device = dump_device_id_text(row, slot.device);
  if (device != slot.bound_device) {
    bind_static(stmt, p + kDeviceId, device);
    slot.bound_device.assign(device);
  }
  bind_static(stmt, p + kPtr, dump_ptr_text(row, slot.ptr));
  std::string_view func;
  if (row.event == DumpEvent::kOomDetail && row.event_type == DumpEventType::kOomTrigger) {
    slot.func_json = json_string_content(text(row.name));  // OOMs are rare: not cached
    func = slot.func_json;
  }
  bind_static(stmt, p + kAttr,
              dump_attr_text(row, owner_attr(row.owner), slot.attr, slot.attr_spill, func));
  if (row.stack_python != slot.bound_stack_python) {
    bind_static(stmt, p + kCallStackPython, text(row.stack_python));
    slot.bound_stack_python = row.stack_python;
  }
  if (row.stack_c != slot.bound_stack_c) {
    bind_static(stmt, p + kCallStackC, text(row.stack_c));
    slot.bound_stack_c = row.stack_c;
  }
}

}  // namespace memtap
