// The compact tables and the memscope_dump view (see compact_schema.h).
#include "monitor/store/compact_schema.h"

#include "monitor/store/memscope_format.h"

namespace memtap {
namespace {

constexpr DumpEvent kDumpEvents[] = {DumpEvent::kMalloc,   DumpEvent::kFree, DumpEvent::kSystem,
                                     DumpEvent::kSnapshot, DumpEvent::kMstx, DumpEvent::kOpLaunch};
constexpr DumpEventType kDumpEventTypes[] = {DumpEventType::kHost,       DumpEventType::kStartTrace,
                                             DumpEventType::kStopTrace,  DumpEventType::kSnapshot,
                                             DumpEventType::kStep,       DumpEventType::kMark,
                                             DumpEventType::kRangeStart, DumpEventType::kRangeEnd,
                                             DumpEventType::kAtenStart,  DumpEventType::kAtenEnd};

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
  std::string sql = std::string("CASE ") + column;
  for (const Enum value : values) {
    sql += " WHEN " + code(value) + " THEN '" + std::string(spell(value)) + "'";
  }
  return sql + " ELSE 'N/A' END";
}

bool is_block_event(DumpEvent event) {
  return event == DumpEvent::kMalloc || event == DumpEvent::kFree;
}

}  // namespace

int64_t pack_detail(const DumpRow& row) {
  if (is_block_event(row.event)) {
    return (int64_t{row.inherited_from_pid} << 1) | (row.is_mmap ? 1 : 0);
  }
  if (row.event == DumpEvent::kSystem && row.event_type == DumpEventType::kStep) {
    return static_cast<int64_t>(row.step);
  }
  if (row.event == DumpEvent::kSnapshot) return static_cast<int64_t>(row.total_bytes);
  return 0;
}

void unpack_detail(int64_t detail, DumpRow* row) {
  if (is_block_event(row->event)) {
    row->is_mmap = (detail & 1) != 0;
    row->inherited_from_pid = static_cast<uint32_t>(static_cast<uint64_t>(detail) >> 1);
  } else if (row->event == DumpEvent::kSystem && row->event_type == DumpEventType::kStep) {
    row->step = static_cast<uint64_t>(detail);
  } else if (row->event == DumpEvent::kSnapshot) {
    row->total_bytes = static_cast<uint64_t>(detail);
  }
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
         "min_timestamp_offset_ns INTEGER);";
}

std::string memscope_dump_view_sql() {
  const std::string malloc_code = code(DumpEvent::kMalloc);
  const std::string free_code = code(DumpEvent::kFree);
  const std::string snapshot_code = code(DumpEvent::kSnapshot);
  const std::string block = "e.event IN (" + malloc_code + ", " + free_code + ")";
  const auto text_of = [](const char* id) {
    return std::string("(SELECT text FROM memtap_string WHERE id = e.") + id + ")";
  };

  // Each column exactly as memscope_format.h spells it (tests compare the two).
  const std::string step =
      "e.event = " + code(DumpEvent::kSystem) + " AND e.event_type = " + code(DumpEventType::kStep);
  const std::string name = "CASE WHEN " + step + " THEN CAST(e.detail AS TEXT) ELSE " +
                           "COALESCE(NULLIF(" + text_of("name") + ", ''), '" +
                           std::string(kDumpNameText) + "') END";
  const std::string device = "CASE WHEN e.event IN (" + malloc_code + ", " + free_code + ", " +
                             snapshot_code + ") THEN '" +
                             std::string(dump_device_id_text(DumpEvent::kMalloc)) + "' ELSE '" +
                             std::string(dump_device_id_text(DumpEvent::kSystem)) + "' END";
  const std::string ptr_hex = "printf('0x%016x', e.ptr)";
  const std::string owner =
      "COALESCE((SELECT ',\"owner\":' || json_quote(text) FROM memtap_string "
      "WHERE id = e.owner AND text <> ''), '')";
  const std::string block_attr =
      "'{\"allocation_id\":\"' || e.allocation_id || '\",\"addr\":\"' || " + ptr_hex +
      " || '\",\"size\":\"' || e.size_bytes || '\"' || " + owner +
      " || CASE WHEN e.detail & 1 THEN ',\"kind\":\"mmap\"' ELSE '' END"
      " || CASE WHEN e.detail >> 1 THEN ',\"inherited_from\":\"' || (e.detail >> 1) || '\"' "
      "ELSE '' END || '}'";
  const std::string snapshot_attr =
      "'{\"app_reserved\":\"' || e.size_bytes || '\"' || "
      "CASE WHEN e.detail THEN ',\"total\":\"' || e.detail || '\"' ELSE '' END || '}'";
  const std::string attr = "CASE WHEN " + block + " THEN " + block_attr +
                           " WHEN e.event = " + snapshot_code + " THEN " + snapshot_attr +
                           " ELSE '' END";
  const auto stack = [&](const char* id) { return "COALESCE(" + text_of(id) + ", '')"; };

  return "CREATE VIEW \"memscope_dump\" AS SELECT e.ID AS \"ID\", " +
         spell_case("e.event", kDumpEvents, dump_event_text) + " AS \"Event\", " +
         spell_case("e.event_type", kDumpEventTypes, dump_event_type_text) +
         " AS \"Event Type\", " + name +
         " AS \"Name\", "
         // An uncorrelated subquery: SQLite evaluates it once per statement.
         "e.timestamp_offset_ns + (SELECT timestamp_base_ns FROM memtap_format) "
         "AS \"Timestamp(ns)\", "
         "(SELECT process_id FROM memtap_thread WHERE thread = e.thread) AS \"Process Id\", "
         "(SELECT thread_id FROM memtap_thread WHERE thread = e.thread) AS \"Thread Id\", " +
         device + " AS \"Device Id\", CASE WHEN " + block + " THEN " + ptr_hex +
         " ELSE 'N/A' END AS \"Ptr\", " + attr + " AS \"Attr\", " + stack("stack_python") +
         " AS \"Call Stack(Python)\", " + stack("stack_c") +
         " AS \"Call Stack(C)\" FROM memtap_event AS e;";
}

}  // namespace

std::string compact_schema_sql() {
  return compact_tables_sql() + memscope_dump_view_sql();
}

}  // namespace memtap
