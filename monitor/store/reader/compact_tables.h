// The small tables of a compact recording (compact_schema.h), loaded before its rows.
//
// memtap_format (the version and the timestamp base) and memtap_thread (thread number ->
// pid, tid) are read into memory once, so that decoding a row is an array lookup rather
// than the view's subqueries; memtap_string is looked up as rows first use an id
// (compact_table_scan.cpp). memtap_event_chunk gives, for a time bound, the last ID a scan
// must visit (last_id_at_or_before).
//
// A live `.partial` file grows while it is read, and each statement sees the file as of its
// start: max(ID) is read first and every scan stops there, so the threads and strings
// read after it cover every row a scan visits (the writer commits them with, or before,
// the rows that use them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/store/reader/sqlite_access.h"

namespace memtap::reader {

// Ids of a small table mapped to positions in its loaded rows: a direct table when the
// ids are dense (the writer numbers threads from 0), else a binary search.
class IdIndex {
 public:
  // `ids` ascending, without repeats.
  void build(std::vector<int64_t> ids);
  // The position of `id`, or -1 when the table has no such row.
  int64_t find(int64_t id) const {
    if (!direct_.empty() || ids_.empty()) {
      return id >= 0 && uint64_t(id) < direct_.size() ? direct_[size_t(id)] : -1;
    }
    return search(id);
  }

 private:
  int64_t search(int64_t id) const;

  std::vector<int64_t> ids_;
  std::vector<int32_t> direct_;  // id -> position, -1 for a gap
};

struct CompactThread {
  int64_t number = 0;  // memtap_thread.thread, what memtap_event.thread refers to
  // As memtap_thread holds them; the decoder checks their range per row, as the text
  // reader checks `Process Id` and `Thread Id`.
  int64_t process_id = 0;
  int64_t thread_id = 0;
};

struct EventChunk {
  int64_t first_id = 0;
  int64_t min_timestamp_offset_ns = 0;
};

struct CompactFile {
  int64_t version = 0;  // memtap_format.version: 2 added memtap_event_stream, 3 memtap_event_pool
  int64_t timestamp_base_ns = 0;
  // max(ID) when loading began; every scan stops there. has_rows false: an empty table.
  bool has_rows = false;
  int64_t last_id = 0;
  int64_t first_id = 0;
  std::vector<CompactThread> threads;
  IdIndex thread_index;
  std::vector<EventChunk> chunks;  // by first_id, ascending
};

// Whether `tables` (sqlite_master's names) hold the compact tables memtap reads directly.
bool has_compact_tables(const std::vector<std::string>& tables);

// Loads the small tables. False with *error for a version this memtap does not read
// ("<path>: memtap_format version 99; this memtap reads versions 1 to 3"), a missing format
// row, or a SQLite failure.
bool load_compact_file(const std::string& path, sqlite3* db, CompactFile* file, std::string* error);

// The last ID a scan for the rows at or before `max_offset_ns` (a timestamp_offset_ns) must
// visit: every such row lies in a chunk whose minimum is at or before it, and rows that no
// chunk row covers yet (the newest ones of a live file) are always visited.
int64_t last_id_at_or_before(const CompactFile& file, int64_t max_offset_ns);

// The thread numbers of process `pid`, for the scan's `thread IN (...)`.
std::vector<int64_t> threads_of(const CompactFile& file, uint32_t pid);

}  // namespace memtap::reader
