// Finishing a recording whose monitor never did (`memtap recover`).
//
// A monitor killed mid-session (SIGKILL, the OOM killer, a machine going down) leaves
// `<out>.partial`: SQLite's WAL keeps every committed transaction (a second at most is lost),
// but the file lacks what finish() adds at the end: memtap_session, memtap_meta's
// complete=1 and, in msMemScope's text form, the three indexes MindStudio Insight expects.
#pragma once

#include <cstdint>
#include <string>

namespace memtap {

struct RecoverResult {
  std::string out_path;     // the finished recording
  uint64_t rows = 0;        // rows it holds
  size_t processes = 0;     // memtap_session rows derived from them
  bool spool_left = false;  // `<partial>.spool` was there: rows queued on disk, not in the file
};

// Finishes `partial_path` (a memtap `.partial` recording) into `out_path` ("": the same
// path without `.partial`), which must not exist. memtap_session gets one row per process
// seen in the rows (pid, first and last event, rows), with ended_by saying the recording
// was cut; memtap_meta gets complete=1 and recovered=1. False with *error (one line naming
// the file and what is wrong) when it is not a memtap recording, already finished, or
// cannot be read or written; the partial file is then left as it was.
bool recover_recording(const std::string& partial_path, const std::string& out_path,
                       RecoverResult* result, std::string* error);

}  // namespace memtap
