// Room kept for a recording's last words: where it stopped, the final counts, the
// processes (MemscopeWriterOptions::reserve_bytes). Held while it records, half given back
// when the recording stops (the stop is written into the file at once), the rest in
// finish().
//
// Two kinds of room, since a disk refuses a file in two ways:
//  - a full file system (ENOSPC, a quota): a file of allocated blocks beside the recording;
//  - a file size limit (RLIMIT_FSIZE, `ulimit -f`; EFBIG): per file, so that the log
//    (-wal), which grows to the limit while the file cannot, is as likely to meet it as the
//    file. No file beside them holds room there: the process's soft limit is lowered by
//    the reserve instead, and raised again as it is given back, never above the user's.
// Best effort throughout: without the room at the start there is simply no reserve.
#pragma once

#include <cstdint>
#include <string>

namespace memtap {

class RecordingReserve {
 public:
  RecordingReserve() = default;
  RecordingReserve(const RecordingReserve&) = delete;
  RecordingReserve& operator=(const RecordingReserve&) = delete;
  ~RecordingReserve() { release(); }

  // `path` is the reserve file's own name; nothing is held when `bytes` is 0.
  void create(const std::string& path, uint64_t bytes);
  void release_half();
  void release();

 private:
  void hold_under_limit(uint64_t bytes);  // changes held_under_limit_ to `bytes`

  std::string path_;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;
  uint64_t held_under_limit_ = 0;
};

// The file size limit in bytes the user set (the soft RLIMIT_FSIZE as it was before any
// reserve lowered it); UINT64_MAX for none.
uint64_t user_file_size_limit();

// For a child between fork() and exec(): its file size limit as the user set it, not as a
// reserve lowered it (a program run under `memtap run` keeps its own). Async-signal-safe.
void restore_user_file_size_limit_in_child();

}  // namespace memtap
