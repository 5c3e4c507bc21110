// memtap's own tables in a recording: `memtap_session` and `memtap_meta` (design §6).
//
// Other tools ignore tables prefixed `memtap_`, so these carry what msMemScope's format has
// no place for: one row per traced process (identity, rank, clock offset, and every
// counter that says how complete its data is) and free-form key/value settings.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "monitor/model/mem_event.h"
#include "monitor/model/process_info.h"

struct sqlite3;

namespace memtap {

// CREATE TABLE statements for both tables. Column names of memtap_session are the
// ProcessInfo field names.
std::string memtap_tables_sql();

// Inserts one memtap_session row per process. On failure sets *error and returns false.
bool write_memtap_session(sqlite3* db, const std::vector<ProcessInfo>& processes,
                          std::string* error);

// memtap_meta's pairs for a recording that stopped before its session ended
// (recording_stopped, recording_stopped_ns, recording_stopped_disk_full, rows_recorded,
// rows_not_recorded, recorded_first_ns, recorded_until_ns), and the stop they describe
// (reason "" when they describe none).
std::vector<std::pair<std::string, std::string>> recording_stop_meta(const RecordingStop& stop);
RecordingStop recording_stop_from_meta(
    const std::vector<std::pair<std::string, std::string>>& meta);

// Inserts the pairs into memtap_meta; a key given twice keeps its last value.
bool write_memtap_meta(sqlite3* db, const std::vector<std::pair<std::string, std::string>>& meta,
                       std::string* error);

}  // namespace memtap
