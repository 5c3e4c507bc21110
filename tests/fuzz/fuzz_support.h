// What the fuzz targets share: the input as a file (the readers take paths, as `memtap
// report FILE` does), invariant checks that stop the fuzzer with a message, and what
// `memtap report` does with the events a reader gave (the engine's analyses and the
// report), since a file's values reach the engine unchecked beyond the reader's parsing.
#pragma once

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "monitor/engine/analyzer.h"
#include "monitor/model/mem_event.h"
#include "monitor/store/export/torch_snapshot_export.h"
#include "monitor/store/reader/recording_reader.h"
#include "monitor/viewdata/step_marks_data.h"

namespace memtap::fuzz {

// A failed check is a finding like a crash: libFuzzer saves the input on abort().
[[noreturn]] inline void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz check failed: %s%s%s\n", what, detail.empty() ? "" : ": ",
               detail.c_str());
  std::abort();
}

// One file per fuzzing process, rewritten for every input: under $TMPDIR (or /dev/shm, a
// file in memory, when there), named after the target and the pid so that parallel jobs
// (-jobs=N) never share one. The pid has a fixed width: the path is in every message, and a
// path one digit longer takes other branches in the string code, so that the same short run
// would find other inputs.
inline std::string input_path(const char* target, const char* suffix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp != nullptr && *tmp != '\0'         ? tmp
                    : access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm"
                                                           : "/tmp";
  char pid[16];
  std::snprintf(pid, sizeof pid, "%010d", int(getpid()));
  return dir + "/memtap_" + target + "_" + pid + suffix;
}

inline void write_input(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail("cannot create the input file", path);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) fail("cannot write the input file", path);
    done += size_t(n);
  }
  ::close(fd);
}

// What read_recording and stream_recording promise whatever the file holds: an error, and
// the warning about skipped rows, are one line naming the file; events come in time order
// and refer to strings that exist.
inline void check_message(const std::string& path, const char* what, const std::string& text) {
  if (text.compare(0, path.size(), path) != 0) fail(what, "does not name the file: " + text);
  if (text.find('\n') != std::string::npos) fail(what, "is not one line: " + text);
}

inline void check_read(const std::string& path, bool ok, const std::string& error,
                       const Recording& recording) {
  if (!ok && error.empty()) fail("read failed without an error");
  if (!ok) check_message(path, "the error", error);
  if (ok && !recording.warning.empty()) check_message(path, "the warning", recording.warning);
}

// Checks what every batch of events must hold; returns whether they were in time order
// (after *last_ts), which only a damaged database excuses.
inline bool check_events(std::span<const MemEvent> events, const StringTable& strings,
                         int64_t* last_ts) {
  bool ordered = true;
  for (const MemEvent& e : events) {
    ordered = ordered && e.ts_ns >= *last_ts;
    *last_ts = e.ts_ns;
    for (uint32_t id : {e.name, e.owner, e.stack_python, e.stack_c}) {
      if (id >= strings.size()) fail("event refers to a string that does not exist");
    }
  }
  return ordered;
}

// Whether SQLite's own integrity check finds the database at `path` damaged; false for a
// file that is no database (the CSVs), whose two reads never have that excuse.
inline bool sqlite_says_damaged(const std::string& path) {
  char head[16] = {};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const bool database = fd >= 0 && ::read(fd, head, sizeof head) == ssize_t(sizeof head) &&
                        std::memcmp(head, "SQLite format 3", sizeof head) == 0;
  if (fd >= 0) ::close(fd);
  if (!database) return false;
  sqlite3* db = nullptr;
  sqlite3_stmt* check = nullptr;
  bool damaged = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK ||
                 sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &check, nullptr) != SQLITE_OK;
  int rc = SQLITE_DONE;
  while (!damaged && (rc = sqlite3_step(check)) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(check, 0));
    damaged = text == nullptr || std::strcmp(text, "ok") != 0;
  }
  sqlite3_finalize(check);
  sqlite3_close(db);
  return damaged || rc != SQLITE_DONE;
}

// The analyses of `memtap report` and the window over what was read, and the report. (A
// file whose Process Id was 4294967295 crashed them: the readers passed it on, as they
// should, and nothing fuzzed the engine behind them.)
inline void analyse(const Recording& rec) {
  Analyzer analyzer(&rec.strings);
  analyzer.add(rec.events.data(), rec.events.size());
  (void)analyzer.report(rec.processes);
  // The window's time axis (steps, marks, ranges, OOMs) over the whole session and over a
  // narrow span: a file's step numbers, names and times are anything.
  const viewdata::EngineView view{analyzer, rec.strings};
  const int64_t t = rec.events.empty() ? 0 : rec.events.front().ts_ns;
  for (size_t i = 0; i < rec.processes.size() && i < 8; ++i) {
    for (const int32_t device : {kHostDevice, 0}) {
      const uint32_t pid = rec.processes[i].pid;
      const viewdata::StepMarksData all =
          viewdata::compute_step_marks(view, pid, device, INT64_MIN, INT64_MAX, 1000);
      int64_t begin = 0, end = 0;
      (void)viewdata::step_span_at(all, t, INT64_MAX, &begin, &end);
      (void)viewdata::range_bars_at(all.ranges, t);
      const int64_t narrow_end = t > INT64_MAX - 1'000'000 ? INT64_MAX : t + 1'000'000;
      (void)viewdata::compute_step_marks(view, pid, device, t, narrow_end, 100);
    }
  }
}

// read_recording (held, as `memtap report` reads a file that fits in memory), then
// stream_recording in small batches (as `memtap report --low-memory` and the window's
// replay of a large file read it): both must agree on success and on the events. What was
// read is then analysed as `memtap report` does.
inline void read_both_ways(const std::string& path) {
  Recording held;
  std::string error;
  const bool held_ok = read_recording(path, &held, &error);
  check_read(path, held_ok, error, held);
  int64_t last_ts = INT64_MIN;
  bool ordered = !held_ok || check_events(held.events, held.strings, &last_ts);

  Recording streamed;
  std::string stream_error;
  size_t streamed_events = 0;
  last_ts = INT64_MIN;
  const bool stream_ok = stream_recording(
      path, 3, &streamed,
      [&](std::span<const MemEvent> batch) {
        ordered = check_events(batch, streamed.strings, &last_ts) && ordered;
        streamed_events += batch.size();
        return true;
      },
      &stream_error);
  check_read(path, stream_ok, stream_error, streamed);
  // The one excuse: a damaged database. Time order walks the timestamp index, file order the
  // table, so only one of them may meet the damage (or a row missing from the index).
  if (!ordered && !sqlite_says_damaged(path)) fail("events out of time order");
  if (held_ok != stream_ok && !sqlite_says_damaged(path)) {
    fail("read_recording and stream_recording disagree",
         held_ok ? "stream: " + stream_error : "held: " + error);
  }
  if (held_ok && stream_ok && held.events.size() != streamed_events && !sqlite_says_damaged(path)) {
    fail("read_recording and stream_recording give different event counts",
         std::to_string(held.events.size()) + " against " + std::to_string(streamed_events));
  }
  if (held_ok) analyse(held);
}

// `memtap export FILE --format torch-snapshot` of the input, written to /dev/null: whatever
// devices, addresses and sizes a file names, the export either writes or fails with one
// line naming the file.
inline void export_as_snapshot(const std::string& path) {
  ExportSummary summary;
  std::string error;
  if (!export_torch_snapshot(path, "/dev/null", ExportOptions{}, &summary, &error)) {
    check_message(path, "a torch-snapshot export's error", error);
  }
}

}  // namespace memtap::fuzz
