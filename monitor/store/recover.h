// Finishing a recording whose monitor never did (`memtap recover`).
//
// A monitor killed mid-session (SIGKILL, the OOM killer, a machine going down) leaves
// `<out>.partial`: SQLite's WAL keeps every committed transaction (a second at most is lost),
// but the file lacks what finish() adds at the end: memtap_session, memtap_meta's
// complete=1 and, in msMemScope's text form, the three indexes MindStudio Insight expects.
#pragma once

#include <cstdint>
#include <string>

#include "monitor/model/mem_event.h"

namespace memtap {

struct RecoverResult {
  std::string out_path;     // the finished recording
  uint64_t rows = 0;        // rows it holds
  size_t processes = 0;     // memtap_session rows derived from them
  bool spool_left = false;  // `<partial>.spool` was there: rows queued on disk, not in the file
  RecordingStop stopped;    // the recording had stopped early (a full disk): where
};

// Finishes `partial_path` (a memtap `.partial` recording) into `out_path` ("": the same
// path without `.partial`), which must not exist. memtap_session gets one row per process
// seen in the rows (pid, first and last event, rows), with ended_by saying the recording
// was cut, unless it has rows already (a recording stopped by a full disk keeps what its
// monitor knew); memtap_meta gets complete=1 and recovered=1, and keeps what it had (where a
// stopped recording stopped). False with *error (one line naming the file and what is
// wrong) when it is not a memtap recording, already finished, or cannot be read or written;
// the partial file is then not finished, and recover can run again (on a full disk: once
// there is room).
bool recover_recording(const std::string& partial_path, const std::string& out_path,
                       RecoverResult* result, std::string* error);

}  // namespace memtap
