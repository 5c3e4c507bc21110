// The compact tables and the memscope_dump view (see compact_schema.h).
#include "monitor/store/compact_schema.h"

#include <algorithm>

#include "monitor/store/memscope_format.h"

namespace memtap {
namespace {

std::string code(DumpEvent event) {
  return std::to_string(static_cast<int>(event));
}

std::string code(DumpEventType type) {
  return std::to_string(static_cast<int>(type));
}

// `CASE column WHEN 0 THEN 'MALLOC' ... ELSE 'N/A' END`, spelled by memscope_format's own
// functions so that the view and the text format cannot drift apart.
template <typename Enum, size_t N, typename Spell>
std::string spell_case(const char* column, const Enum (&values)[N], Spell spell) {
  std::string sql = std::string("(CASE ") + column;
  for (const Enum value : values) {
    sql += " WHEN " + code(value) + " THEN '" + std::string(spell(value)) + "'";
  }
  return sql + " ELSE 'N/A' END)";
}

bool is_block_event(DumpEvent event) {
  return event == DumpEvent::kMalloc || event == DumpEvent::kFree;
}

int64_t bits(uint64_t value) {
  return static_cast<int64_t>(value);
}

// The SQL twins of the conditions pack_columns decides on.
const std::string& host_block_sql() {
  static const std::string sql = "(e.event IN (" + code(DumpEvent::kMalloc) + ", " +
                                 code(DumpEvent::kFree) +
                                 ") AND e.event_type = " + code(DumpEventType::kHost) + ")";
  return sql;
}

std::string event_and_type_sql(DumpEvent event, DumpEventType type) {
  return "(e.event = " + code(event) + " AND e.event_type = " + code(type) + ")";
}

std::string device_detail_sql() {
  return "(e.event_type NOT IN (" + code(DumpEventType::kHost) + ", " + code(DumpEventType::kStep) +
         ", " + code(DumpEventType::kSnapshot) + ") AND e.detail > 0)";
}

bool is_pool_snapshot(const DumpRow& row) {
  return row.event == DumpEvent::kSnapshot && row.event_type == DumpEventType::kPta;
}

std::string text_of(const char* id) {
  return std::string("(SELECT text FROM memtap_string WHERE id = e.") + id + ")";
}

}  // namespace

CompactColumns pack_columns(const DumpRow& row) {
  CompactColumns c;
  if (dump_row_has_block(row)) {
    c.ptr = bits(row.ptr);
    c.size_bytes = bits(row.size_bytes);
    c.allocation_id = bits(row.allocation_id);
    c.owner = row.owner;
  }
  if (row.event_type == DumpEventType::kHost && is_block_event(row.event)) {
    c.detail = (int64_t{row.inherited_from_pid} << 1) | (row.is_mmap ? 1 : 0);
  } else if (row.event == DumpEvent::kSystem && row.event_type == DumpEventType::kStep) {
    c.detail = bits(row.step);
  } else if (is_pool_snapshot(row)) {
    // Never negative when written (memscope_format.h): the text says 0 for an unknown one.
    c.size_bytes = std::max<int64_t>(row.pool_used, 0);
    c.ptr = std::max<int64_t>(row.pool_total, 0);
    c.detail = int64_t{row.device} + 1;
    if (row.has_pool_peaks) {  // the pool's own peaks: max allocated as used, max reserved as total
      c.has_pool_row = true;
      c.pool_used = bits(row.size_bytes);
      c.pool_total = bits(row.total_bytes);
    }
  } else if (row.event == DumpEvent::kSnapshot) {
    c.size_bytes = bits(row.size_bytes);
    c.detail = bits(row.total_bytes);
  } else if (detail_holds_device(row.event_type)) {
    c.detail = int64_t{row.device} + 1;  // kDumpNoDevice: 0
  }
  if (row.event == DumpEvent::kFreeCompleted) {
    c.ptr = bits(row.ptr);
    c.size_bytes = bits(row.size_bytes);
  }
  if (dump_row_is_pool_block(row)) {
    c.has_pool_row = true;
    c.pool_used = std::max<int64_t>(row.pool_used, -1);
    c.pool_total = std::max<int64_t>(row.pool_total, -1);
    c.free_pending = row.event == DumpEvent::kFree && row.free_pending;
  }
  if (dump_block_has_stream(row)) {
    c.has_stream_row = true;
    c.stream = bits(row.stream);
  } else if (row.event == DumpEvent::kKernelLaunch ||
             (row.event == DumpEvent::kOomDetail && row.event_type == DumpEventType::kOomTrigger)) {
    c.ptr = bits(row.stream);
  }
  if (row.event == DumpEvent::kOomDetail && row.event_type == DumpEventType::kOomTrigger) {
    c.size_bytes = bits(row.size_bytes);
  } else if (row.event == DumpEvent::kSystem && row.event_type == DumpEventType::kStartTrace &&
             row.device >= 0) {
    c.size_bytes = bits(row.size_bytes);
    c.ptr = bits(row.total_bytes);
  }
  return c;
}

void unpack_columns(const CompactColumns& c, DumpRow* row) {
  if (dump_row_has_block(*row)) {
    row->ptr = uint64_t(c.ptr);
    row->size_bytes = uint64_t(c.size_bytes);
    row->allocation_id = uint64_t(c.allocation_id);
    row->owner = uint32_t(c.owner);
  }
  if (row->event_type == DumpEventType::kHost && is_block_event(row->event)) {
    row->is_mmap = (c.detail & 1) != 0;
    row->inherited_from_pid = static_cast<uint32_t>(static_cast<uint64_t>(c.detail) >> 1);
  } else if (row->event == DumpEvent::kSystem && row->event_type == DumpEventType::kStep) {
    row->step = uint64_t(c.detail);
  } else if (is_pool_snapshot(*row)) {
    row->pool_used = c.size_bytes;
    row->pool_total = c.ptr;
    if (c.detail > 0 && c.detail <= INT32_MAX) row->device = int32_t(c.detail - 1);
    if (c.has_pool_row && c.pool_used >= 0 && c.pool_total >= 0) {
      row->has_pool_peaks = true;
      row->size_bytes = uint64_t(c.pool_used);
      row->total_bytes = uint64_t(c.pool_total);
    }
  } else if (row->event == DumpEvent::kSnapshot) {
    row->size_bytes = uint64_t(c.size_bytes);
    row->total_bytes = uint64_t(c.detail);
  } else if (detail_holds_device(row->event_type) && c.detail > 0 && c.detail <= INT32_MAX) {
    row->device = int32_t(c.detail - 1);
  }
  if (row->event == DumpEvent::kFreeCompleted) {
    row->ptr = uint64_t(c.ptr);
    row->size_bytes = uint64_t(c.size_bytes);
  }
  if (dump_row_is_pool_block(*row)) {
    row->pool_used = c.has_pool_row ? c.pool_used : -1;
    row->pool_total = c.has_pool_row ? c.pool_total : -1;
    row->free_pending = c.has_pool_row && c.free_pending && row->event == DumpEvent::kFree;
  }
  if (is_block_event(row->event) &&
      (row->event_type == DumpEventType::kHal || row->event_type == DumpEventType::kHostPinned ||
       row->event_type == DumpEventType::kPta)) {
    row->has_stream = c.has_stream_row;
    row->stream = c.has_stream_row ? uint64_t(c.stream) : 0;
  } else if (row->event == DumpEvent::kKernelLaunch ||
             (row->event == DumpEvent::kOomDetail &&
              row->event_type == DumpEventType::kOomTrigger)) {
    row->has_stream = true;  // always written
    row->stream = uint64_t(c.ptr);
  }
  if (row->event == DumpEvent::kOomDetail && row->event_type == DumpEventType::kOomTrigger) {
    row->size_bytes = uint64_t(c.size_bytes);
  } else if (row->event == DumpEvent::kSystem && row->event_type == DumpEventType::kStartTrace &&
             row->device >= 0) {
    row->size_bytes = uint64_t(c.size_bytes);
    row->total_bytes = uint64_t(c.ptr);
  }
}

std::string compact_event_sql() {
  return spell_case("e.event", kCompactEvents, dump_event_text);
}

std::string compact_event_type_sql() {
  return spell_case("e.event_type", kCompactEventTypes, dump_event_type_text);
}

std::string compact_name_sql() {
  const std::string step = event_and_type_sql(DumpEvent::kSystem, DumpEventType::kStep);
  return "(CASE WHEN " + step + " THEN CAST(e.detail AS TEXT) ELSE COALESCE(NULLIF(" +
         text_of("name") + ", ''), '" + std::string(kDumpNameText) + "') END)";
}

std::string compact_device_id_sql() {
  return "(CASE WHEN " + device_detail_sql() +
         " THEN CAST(e.detail - 1 AS TEXT) WHEN e.event IN (" + code(DumpEvent::kMalloc) + ", " +
         code(DumpEvent::kFree) + ", " + code(DumpEvent::kSnapshot) + ") THEN '" +
         std::string(dump_device_id_text(DumpEvent::kMalloc)) + "' ELSE '" +
         std::string(dump_device_id_text(DumpEvent::kSystem)) + "' END)";
}

std::string compact_block_sql() {
  return "(e.event IN (" + code(DumpEvent::kMalloc) + ", " + code(DumpEvent::kFree) + ") OR " +
         event_and_type_sql(DumpEvent::kOomDetail, DumpEventType::kOomTopAlloc) + ")";
}

std::string compact_has_ptr_sql() {
  return "(" + compact_block_sql() + " OR e.event = " + code(DumpEvent::kFreeCompleted) + ")";
}

std::string compact_ptr_sql() {
  return "(CASE WHEN " + compact_has_ptr_sql() + " THEN printf('0x%016x', e.ptr) ELSE 'N/A' END)";
}

std::string compact_attr_sql() {
  const std::string ptr_hex = "printf('0x%016x', e.ptr)";
  const std::string owner =
      "COALESCE((SELECT ',\"owner\":' || json_quote(text) FROM memtap_string "
      "WHERE id = e.owner AND text <> ''), '')";
  // The stream table is looked up only for device, pinned and pool blocks: host rows, the
  // many, never have one.
  const std::string stream = "CASE WHEN e.event_type IN (" + code(DumpEventType::kHal) + ", " +
                             code(DumpEventType::kHostPinned) + ", " + code(DumpEventType::kPta) +
                             ") THEN COALESCE((SELECT ',\"stream\":\"' || printf('%llu', stream) "
                             "|| '\"' FROM memtap_event_stream "
                             "WHERE ID = e.ID), '') ELSE '' END";
  // A pool block's used, total and pending, in the order memscope_format.h writes them.
  const std::string pool =
      "CASE WHEN e.event_type = " + code(DumpEventType::kPta) +
      " THEN COALESCE((SELECT CASE WHEN total IS NOT NULL THEN ',\"total\":\"' || total || '\"' "
      "ELSE '' END || CASE WHEN used IS NOT NULL THEN ',\"used\":\"' || used || '\"' ELSE '' "
      "END || CASE WHEN pending THEN ',\"pending\":\"1\"' ELSE '' END FROM memtap_event_pool "
      "WHERE ID = e.ID), '') ELSE '' END";
  const std::string block_attr =
      "'{\"allocation_id\":\"' || e.allocation_id || '\",\"addr\":\"' || " + ptr_hex +
      " || '\",\"size\":\"' || e.size_bytes || '\"' || " + owner + " || CASE WHEN " +
      host_block_sql() + " AND e.detail & 1 THEN ',\"kind\":\"mmap\"' ELSE '' END || CASE WHEN " +
      host_block_sql() +
      " AND e.detail >> 1 THEN ',\"inherited_from\":\"' || (e.detail >> 1) || '\"' ELSE '' END "
      "|| " +
      pool + " || " + stream + " || '}'";
  const std::string snapshot_attr =
      "'{\"app_reserved\":\"' || e.size_bytes || '\"' || "
      "CASE WHEN e.detail THEN ',\"total\":\"' || e.detail || '\"' ELSE '' END || '}'";
  // Streams are handles (pointers): unsigned, as the text rows write them.
  const std::string kernel_attr = "'{\"stream\":\"' || printf('%llu', e.ptr) || '\"}'";
  const std::string oom_attr = "'{\"func\":' || json_quote(COALESCE(" + text_of("name") +
                               ", '')) || ',\"req_size\":\"' || e.size_bytes || "
                               "'\",\"size\":\"' || e.size_bytes || "
                               "'\",\"stream\":\"' || printf('%llu', e.ptr) || '\"}'";
  const std::string device_start_attr =
      "'{\"free\":\"' || e.size_bytes || '\",\"total\":\"' || e.ptr || '\"}'";
  // A device pool's peaks, when it has them, as memscope_format.h writes them.
  const std::string pool_peaks =
      "COALESCE((SELECT ',\"max_allocated\":\"' || used || '\",\"max_reserved\":\"' || total || "
      "'\"' FROM memtap_event_pool WHERE ID = e.ID AND used IS NOT NULL AND total IS NOT NULL), "
      "'')";
  const std::string pool_snapshot_attr =
      "'{\"allocated\":\"' || e.size_bytes || "
      "'\",\"reserved\":\"' || e.ptr || '\"' || " +
      pool_peaks + " || '}'";
  const std::string completed_attr = "'{\"size\":\"' || e.size_bytes || '\"}'";
  return "(CASE WHEN " + compact_block_sql() + " THEN " + block_attr + " WHEN " +
         event_and_type_sql(DumpEvent::kSnapshot, DumpEventType::kPta) + " THEN " +
         pool_snapshot_attr + " WHEN e.event = " + code(DumpEvent::kSnapshot) + " THEN " +
         snapshot_attr + " WHEN e.event = " + code(DumpEvent::kFreeCompleted) + " THEN " +
         completed_attr + " WHEN e.event = " + code(DumpEvent::kKernelLaunch) + " THEN " +
         kernel_attr + " WHEN " +
         event_and_type_sql(DumpEvent::kOomDetail, DumpEventType::kOomTrigger) + " THEN " +
         oom_attr + " WHEN " + event_and_type_sql(DumpEvent::kSystem, DumpEventType::kStartTrace) +
         " AND e.detail > 0 THEN " + device_start_attr + " ELSE '' END)";
}

namespace {

std::string compact_tables_sql() {
  return "CREATE TABLE memtap_format (version INTEGER, timestamp_base_ns INTEGER);"
         "INSERT INTO memtap_format VALUES (" +
         std::to_string(kCompactFormatVersion) +
         ", 0);"
         "CREATE TABLE memtap_event (ID INTEGER PRIMARY KEY, event INTEGER, event_type INTEGER, "
         "timestamp_offset_ns INTEGER, thread INTEGER, ptr INTEGER, size_bytes INTEGER, "
         "allocation_id INTEGER, name INTEGER, owner INTEGER, stack_python INTEGER, "
         "stack_c INTEGER, detail INTEGER);"
         "CREATE TABLE memtap_thread (thread INTEGER PRIMARY KEY, process_id INTEGER, "
         "thread_id INTEGER);"
         "CREATE TABLE memtap_string (id INTEGER PRIMARY KEY, text TEXT);"
         "CREATE TABLE memtap_event_chunk (first_id INTEGER PRIMARY KEY, "
         "min_timestamp_offset_ns INTEGER);"
         "CREATE TABLE memtap_event_stream (ID INTEGER PRIMARY KEY, stream INTEGER);"
         "CREATE TABLE memtap_event_pool (ID INTEGER PRIMARY KEY, used INTEGER, total INTEGER, "
         "pending INTEGER);";
}

std::string memscope_dump_view_sql() {
  const auto stack = [&](const char* id) { return "COALESCE(" + text_of(id) + ", '')"; };
  // Each column exactly as memscope_format.h spells it (tests compare the two).
  return "CREATE VIEW \"memscope_dump\" AS SELECT e.ID AS \"ID\", " + compact_event_sql() +
         " AS \"Event\", " + compact_event_type_sql() + " AS \"Event Type\", " +
         compact_name_sql() +
         " AS \"Name\", "
         // An uncorrelated subquery: SQLite evaluates it once per statement.
         "e.timestamp_offset_ns + (SELECT timestamp_base_ns FROM memtap_format) "
         "AS \"Timestamp(ns)\", "
         "(SELECT process_id FROM memtap_thread WHERE thread = e.thread) AS \"Process Id\", "
         "(SELECT thread_id FROM memtap_thread WHERE thread = e.thread) AS \"Thread Id\", " +
         compact_device_id_sql() + " AS \"Device Id\", " + compact_ptr_sql() + " AS \"Ptr\", " +
         compact_attr_sql() + " AS \"Attr\", " + stack("stack_python") +
         " AS \"Call Stack(Python)\", " + stack("stack_c") +
         " AS \"Call Stack(C)\" FROM memtap_event AS e;";
}

}  // namespace

std::string compact_schema_sql() {
  return compact_tables_sql() + memscope_dump_view_sql();
}

}  // namespace memtap
