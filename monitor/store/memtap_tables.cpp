// memtap's own tables in a recording (see memtap_tables.h).
#include "monitor/store/memtap_tables.h"

#include <sqlite3.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "monitor/store/sqlite_status.h"

namespace memtap {
namespace {

using BindFn = int (*)(sqlite3_stmt*, int, const ProcessInfo&);

// Integers, counters and flags. uint64 counters go in as int64: SQLite has no unsigned
// type, and no counter comes near 2^63.
template <auto Field>
int bind_integer(sqlite3_stmt* stmt, int param, const ProcessInfo& p) {
  return sqlite3_bind_int64(stmt, param, static_cast<int64_t>(p.*Field));
}

template <auto Field>
int bind_text(sqlite3_stmt* stmt, int param, const ProcessInfo& p) {
  const std::string& text = p.*Field;
  return sqlite3_bind_text(stmt, param, text.data(), static_cast<int>(text.size()),
                           SQLITE_TRANSIENT);
}

// A random 64-bit id does not fit SQLite's signed INTEGER, so it is stored as hex text.
int bind_instance_id(sqlite3_stmt* stmt, int param, const ProcessInfo& p) {
  char text[24];
  const int size = std::snprintf(text, sizeof text, "%016" PRIx64, p.instance_id);
  return sqlite3_bind_text(stmt, param, text, size, SQLITE_TRANSIENT);
}

std::string join_with_spaces(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) {
    if (!text.empty()) text += ' ';
    text += word;
  }
  return text;
}

int bind_command_line(sqlite3_stmt* stmt, int param, const ProcessInfo& p) {
  const std::string text = join_with_spaces(p.command_line);
  return sqlite3_bind_text(stmt, param, text.data(), static_cast<int>(text.size()),
                           SQLITE_TRANSIENT);
}

int bind_child_pids(sqlite3_stmt* stmt, int param, const ProcessInfo& p) {
  std::string text;
  for (uint32_t pid : p.child_pids) {
    if (!text.empty()) text += ' ';
    text += std::to_string(pid);
  }
  return sqlite3_bind_text(stmt, param, text.data(), static_cast<int>(text.size()),
                           SQLITE_TRANSIENT);
}

struct SessionColumn {
  const char* name;  // the ProcessInfo field's name
  const char* type;
  BindFn bind;
};

// One entry per ProcessInfo field: a field added there gets its column here, named the same
// (a test compares sizeof(ProcessInfo) to catch a field that was forgotten).
constexpr SessionColumn kSessionColumns[] = {
    {"pid", "INTEGER", bind_integer<&ProcessInfo::pid>},
    {"instance_id", "TEXT", bind_instance_id},
    {"ppid", "INTEGER", bind_integer<&ProcessInfo::ppid>},
    {"forked_from_pid", "INTEGER", bind_integer<&ProcessInfo::forked_from_pid>},
    {"hostname", "TEXT", bind_text<&ProcessInfo::hostname>},
    {"command_line", "TEXT", bind_command_line},
    {"rank", "INTEGER", bind_integer<&ProcessInfo::rank>},
    {"world_size", "INTEGER", bind_integer<&ProcessInfo::world_size>},
    {"agent_version", "TEXT", bind_text<&ProcessInfo::agent_version>},
    {"realtime_offset_ns", "INTEGER", bind_integer<&ProcessInfo::realtime_offset_ns>},
    {"start_ns", "INTEGER", bind_integer<&ProcessInfo::start_ns>},
    {"end_ns", "INTEGER", bind_integer<&ProcessInfo::end_ns>},
    {"events_received", "INTEGER", bind_integer<&ProcessInfo::events_received>},
    {"events_dropped", "INTEGER", bind_integer<&ProcessInfo::events_dropped>},
    {"events_lost", "INTEGER", bind_integer<&ProcessInfo::events_lost>},
    {"messages_lost", "INTEGER", bind_integer<&ProcessInfo::messages_lost>},
    {"events_sent", "INTEGER", bind_integer<&ProcessInfo::events_sent>},
    {"events_sent_before", "INTEGER", bind_integer<&ProcessInfo::events_sent_before>},
    {"unmatched_frees", "INTEGER", bind_integer<&ProcessInfo::unmatched_frees>},
    {"late_events", "INTEGER", bind_integer<&ProcessInfo::late_events>},
    {"stalls", "INTEGER", bind_integer<&ProcessInfo::stalls>},
    {"lost_frees", "INTEGER", bind_integer<&ProcessInfo::lost_frees>},
    {"inherited_blocks", "INTEGER", bind_integer<&ProcessInfo::inherited_blocks>},
    {"reconnects", "INTEGER", bind_integer<&ProcessInfo::reconnects>},
    {"unresolved_strings", "INTEGER", bind_integer<&ProcessInfo::unresolved_strings>},
    {"memory_total_bytes", "INTEGER", bind_integer<&ProcessInfo::memory_total_bytes>},
    {"bye_received", "INTEGER", bind_integer<&ProcessInfo::bye_received>},
    {"child_pids", "TEXT", bind_child_pids},  // space-separated, from Bye
    {"ended_by", "TEXT", bind_text<&ProcessInfo::ended_by>},
    {"peer_address", "TEXT", bind_text<&ProcessInfo::peer_address>},
};

// Runs a prepared INSERT once per item; the statement is finalized whatever happens.
template <typename Items, typename Bind>
bool insert_each(sqlite3* db, const std::string& sql, const Items& items, Bind bind,
                 const char* table, std::string* error) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  size_t position = 0;
  for (; rc == SQLITE_OK && position < items.size(); ++position) {
    rc = bind(stmt, items[position]);
    if (rc != SQLITE_OK) break;
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) break;
    rc = sqlite3_reset(stmt);
  }
  if (rc != SQLITE_OK && error != nullptr) {
    *error = std::string("writing ") + table + " row " + std::to_string(position) + ": " +
             sqlite_error_text(db, rc);
  }
  sqlite3_finalize(stmt);
  return rc == SQLITE_OK;
}

}  // namespace

std::string memtap_tables_sql() {
  std::string sql = "CREATE TABLE memtap_session (";
  for (const SessionColumn& column : kSessionColumns) {
    if (&column != &kSessionColumns[0]) sql += ", ";
    sql += column.name;
    sql += ' ';
    sql += column.type;
  }
  sql += ");CREATE TABLE memtap_meta (key TEXT PRIMARY KEY, value TEXT);";
  return sql;
}

bool write_memtap_session(sqlite3* db, const std::vector<ProcessInfo>& processes,
                          std::string* error) {
  std::string sql = "INSERT INTO memtap_session VALUES (";
  for (size_t i = 0; i < std::size(kSessionColumns); ++i) sql += i == 0 ? "?" : ", ?";
  sql += ")";
  auto bind = [](sqlite3_stmt* stmt, const ProcessInfo& process) {
    int param = 1;
    for (const SessionColumn& column : kSessionColumns) {
      const int rc = column.bind(stmt, param++, process);
      if (rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
  };
  std::vector<ProcessInfo> in_order = processes;
  std::stable_sort(in_order.begin(), in_order.end(), started_before);
  return insert_each(db, sql, in_order, bind, "memtap_session", error);
}

std::vector<std::pair<std::string, std::string>> recording_stop_meta(const RecordingStop& stop) {
  return {{"recording_stopped", stop.reason},
          {"recording_stopped_ns", std::to_string(stop.stopped_ns)},
          {"recording_stopped_disk_full", stop.disk_full ? "1" : "0"},
          {"rows_recorded", std::to_string(stop.rows_recorded)},
          {"rows_not_recorded", std::to_string(stop.rows_not_recorded)},
          {"recorded_first_ns", std::to_string(stop.first_ns)},
          {"recorded_until_ns", std::to_string(stop.recorded_until_ns)}};
}

RecordingStop recording_stop_from_meta(
    const std::vector<std::pair<std::string, std::string>>& meta) {
  RecordingStop stop;
  // Numbers memtap wrote; anything else reads as 0 (strtoll), never as an error.
  auto number = [](const std::string& text) { return std::strtoll(text.c_str(), nullptr, 10); };
  for (const auto& [key, value] : meta) {
    if (key == "recording_stopped") stop.reason = value;
    if (key == "recording_stopped_ns") stop.stopped_ns = number(value);
    if (key == "recording_stopped_disk_full") stop.disk_full = value == "1";
    if (key == "rows_recorded") stop.rows_recorded = uint64_t(number(value));
    if (key == "rows_not_recorded") stop.rows_not_recorded = uint64_t(number(value));
    if (key == "recorded_first_ns") stop.first_ns = number(value);
    if (key == "recorded_until_ns") stop.recorded_until_ns = number(value);
  }
  return stop;
}

bool write_memtap_meta(sqlite3* db, const std::vector<std::pair<std::string, std::string>>& meta,
                       std::string* error) {
  auto bind = [](sqlite3_stmt* stmt, const std::pair<std::string, std::string>& pair) {
    int rc = sqlite3_bind_text(stmt, 1, pair.first.data(), static_cast<int>(pair.first.size()),
                               SQLITE_STATIC);
    if (rc != SQLITE_OK) return rc;
    return sqlite3_bind_text(stmt, 2, pair.second.data(), static_cast<int>(pair.second.size()),
                             SQLITE_STATIC);
  };
  return insert_each(db, "INSERT OR REPLACE INTO memtap_meta VALUES (?1, ?2)", meta, bind,
                     "memtap_meta", error);
}

}  // namespace memtap
