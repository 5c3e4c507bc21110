// Finishing a recording whose monitor never did (see recover.h).
#include "monitor/store/recover.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "monitor/model/process_info.h"
#include "monitor/store/memscope_indexes.h"
#include "monitor/store/memscope_schema.h"
#include "monitor/store/memtap_tables.h"
#include "monitor/store/sqlite_rows.h"
#include "monitor/store/sqlite_status.h"

namespace memtap {
namespace {

constexpr const char kPartialSuffix[] = ".partial";
// What a failure on a full disk adds: nothing was changed that another try would not redo.
constexpr const char kNotFinishedYet[] =
    "; the file is not finished yet: free some space on its disk and run memtap recover again";

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool recover_recording(const std::string& partial_path, const std::string& out_path,
                       RecoverResult* result, std::string* error) {
  auto fail = [&](const std::string& what) {
    *error = partial_path + ": " + what;
    return false;
  };
  std::string out = out_path;
  if (out.empty()) {
    if (!ends_with(partial_path, kPartialSuffix)) {
      return fail("expected a file named OUT.partial (what memtap leaves while recording to OUT)");
    }
    out = partial_path.substr(0, partial_path.size() - (sizeof kPartialSuffix - 1));
  }
  if (!exists(partial_path)) return fail(std::strerror(ENOENT));
  if (exists(out)) return fail(out + " exists already: remove it, or give another name with -o");

  DbHandle handle;
  // No SQLITE_OPEN_CREATE: a missing file is an error, not a new empty database.
  int rc = sqlite3_open_v2(partial_path.c_str(), &handle.db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc != SQLITE_OK) return fail("cannot open: " + sqlite_error_text(handle.db, rc));
  sqlite3* db = handle.db;
  sqlite3_busy_timeout(db, 5000);

  std::string reason;
  std::vector<std::string> tables;
  if (!for_each_row(
          db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')",
          [&](sqlite3_stmt* s) { tables.push_back(column_string(s, 0)); }, &reason)) {
    // A file in WAL mode is read through a -shm file, which a full disk has no room for.
    if (sqlite_disk_full(db, sqlite3_extended_errcode(db))) return fail(reason + kNotFinishedYet);
    return fail("not a readable SQLite database: " + reason);
  }
  auto has = [&](const char* name) {
    for (const std::string& t : tables) {
      if (t == name) return true;
    }
    return false;
  };
  if (!has("memtap_meta") || !has("memscope_dump")) {
    return fail("not a memtap recording (expected the tables memscope_dump and memtap_meta)");
  }
  bool complete = false;
  if (!for_each_row(
          db, "SELECT value FROM memtap_meta WHERE key = 'complete'",
          [&](sqlite3_stmt* s) { complete = complete || column_string(s, 0) == "1"; }, &reason)) {
    return fail(reason);
  }
  if (complete) return fail("the recording is finished already (memtap_meta complete = 1)");
  const bool compact = has("memtap_event");
  std::vector<std::pair<std::string, std::string>> old_meta;
  if (!for_each_row(
          db, "SELECT key, value FROM memtap_meta",
          [&](sqlite3_stmt* s) { old_meta.emplace_back(column_string(s, 0), column_string(s, 1)); },
          &reason)) {
    return fail(reason);
  }
  // A recording that stopped on a full disk has its processes already (finish() wrote them
  // in the room it had kept), and so has one that an earlier recover got half way through.
  int64_t sessions = 0;
  if (!for_each_row(
          db, "SELECT COUNT(*) FROM memtap_session",
          [&](sqlite3_stmt* s) { sessions = sqlite3_column_int64(s, 0); }, &reason)) {
    return fail(reason);
  }

  // One memtap_session row per process, from its rows: what the monitor knew (hostname,
  // command line, agent counters) died with it.
  std::vector<ProcessInfo> processes;
  uint64_t rows = 0;
  if (!for_each_row(
          db,
          "SELECT \"Process Id\", MIN(\"Timestamp(ns)\"), MAX(\"Timestamp(ns)\"), COUNT(*) "
          "FROM memscope_dump GROUP BY \"Process Id\" ORDER BY MIN(\"Timestamp(ns)\")",
          [&](sqlite3_stmt* s) {
            ProcessInfo& p = processes.emplace_back();
            p.pid = uint32_t(sqlite3_column_int64(s, 0));
            p.start_ns = sqlite3_column_int64(s, 1);
            p.end_ns = sqlite3_column_int64(s, 2);
            p.events_received = uint64_t(sqlite3_column_int64(s, 3));
            p.ended_by = "unknown: the recording was cut (recovered)";
            rows += p.events_received;
          },
          &reason)) {
    return fail("reading its rows: " + reason);
  }
  if (sessions != 0) processes.clear();
  const std::vector<std::pair<std::string, std::string>> meta = {
      {"recovered", "1"},
      {"recovered_from", partial_path},
      {"recovered_rows", std::to_string(rows)}};
  // `complete` goes in last, on its own, once the file is in its final form: a disk that
  // fills on the way leaves a file that is still not finished, and recover can run again.
  // A rollback journal before the indexes, as finish() does: their pages then go straight
  // into the file instead of through the log.
  bool ok = sqlite_exec(db, "PRAGMA cache_size=-131072", &reason) &&
            sqlite_exec(db, "PRAGMA journal_mode=DELETE", &reason) &&
            sqlite_exec(db, "BEGIN", &reason) && write_memtap_session(db, processes, &reason) &&
            write_memtap_meta(db, meta, &reason);
  // Each index only where it is missing: the partial ones came with the table, and an
  // earlier recover may have built them all.
  if (ok && !compact) ok = build_memscope_indexes(db, &reason);
  ok = ok && sqlite_exec(db, "COMMIT", &reason) &&
       write_memtap_meta(db, {{"complete", "1"}}, &reason);
  if (!ok) {
    const bool disk_full = sqlite_disk_full(db, sqlite3_extended_errcode(db));
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return fail(reason + (disk_full ? kNotFinishedYet : ""));
  }
  rc = sqlite3_close(db);
  handle.db = nullptr;
  if (rc != SQLITE_OK) return fail("closing: " + std::string(sqlite3_errstr(rc)));
  if (std::rename(partial_path.c_str(), out.c_str()) != 0) {
    return fail("renaming to " + out + ": " + std::strerror(errno));
  }
  result->out_path = out;
  result->rows = rows;
  result->processes = sessions != 0 ? size_t(sessions) : processes.size();
  result->spool_left = exists(partial_path + ".spool");
  result->stopped = recording_stop_from_meta(old_meta);
  // Room a killed monitor kept on the disk (memscope_writer.h): of no use any more.
  unlink((partial_path + ".reserve").c_str());
  return true;
}

}  // namespace memtap
