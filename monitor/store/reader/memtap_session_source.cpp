// memtap's `memtap_session` table (see memtap_session_source.h).
#include "monitor/store/reader/memtap_session_source.h"

#include <unordered_map>

#include "monitor/store/reader/sqlite_access.h"

namespace memtap::reader {

bool read_memtap_session(const std::string& path, sqlite3* db,
                         std::vector<RecordedProcess>* processes, std::string* error) {
  std::vector<std::string> columns;
  if (!table_columns(path, db, "memtap_session", &columns, error)) return false;
  // Columns an older file lacks read as NULL: 0, or empty.
  const char* const wanted[] = {"pid",         "hostname",           "command_line",   "rank",
                                "world_size",  "forked_from_pid",    "events_dropped", "ended_by",
                                "events_lost", "events_sent_before", "stalls"};
  std::string select;
  for (const char* name : wanted) {
    select += std::string(select.empty() ? "" : ", ") +
              (find_column(columns, name) >= 0 ? quote_identifier(name) : "NULL");
  }
  // Each row's process by pid: a hash, since a crafted file may hold any number of rows and
  // a scan of the processes read so far made that quadratic. The last of equal pids wins.
  std::unordered_map<uint32_t, size_t> by_pid;
  for (size_t i = 0; i < processes->size(); ++i) by_pid[(*processes)[i].pid] = i;
  const auto read_row = [&](sqlite3_stmt* s) {
    const auto pid = static_cast<uint32_t>(sqlite3_column_int64(s, 0));
    const auto [it, added] = by_pid.try_emplace(pid, processes->size());
    if (added) processes->emplace_back().pid = pid;
    RecordedProcess* process = &(*processes)[it->second];
    process->hostname = column_string(s, 1);
    process->command_line = column_string(s, 2);
    if (sqlite3_column_type(s, 3) != SQLITE_NULL) {
      process->rank = static_cast<int32_t>(sqlite3_column_int64(s, 3));
    }
    if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
      process->world_size = static_cast<int32_t>(sqlite3_column_int64(s, 4));
    }
    if (process->forked_from_pid == 0) {
      process->forked_from_pid = static_cast<uint32_t>(sqlite3_column_int64(s, 5));
    }
    process->events_dropped += static_cast<uint64_t>(sqlite3_column_int64(s, 6));
    process->ended_by = column_string(s, 7);
    process->events_lost += static_cast<uint64_t>(sqlite3_column_int64(s, 8));
    process->events_sent_before += static_cast<uint64_t>(sqlite3_column_int64(s, 9));
    process->stalls += static_cast<uint64_t>(sqlite3_column_int64(s, 10));
  };
  // In the order the processes started (what memtap writes; a table of an older memtap,
  // written in the order their Hellos came, is put in that order here).
  std::string order;
  for (const char* name : {"start_ns", "pid", "instance_id"}) {
    if (find_column(columns, name) < 0) continue;
    order += std::string(order.empty() ? " ORDER BY " : ", ") + quote_identifier(name);
  }
  order += order.empty() ? " ORDER BY rowid" : ", rowid";  // ties: as written
  return for_each_row(path, db, "SELECT " + select + " FROM memtap_session" + order, read_row,
                      error);
}

}  // namespace memtap::reader
