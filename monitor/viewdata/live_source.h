// The live data sources (data_source.h): the window records what it shows, exactly as the
// headless commands do. `--listen` is `memtap record` with a window; `--run` is `memtap run`
// with a window. The socket, the session and the program are the receiving thread's
// (LiveRecording, ProgramRun); the engine is the live AnalysisThread, and the block index is
// fed from it.
//
// Ending: --listen ends on stop() (the window closed, or Ctrl-C): the recording is finished
// and written. --run ends when the program and everything it started have ended (Ctrl-C is
// forwarded to the program, as memtap run does); closing the window does not stop the
// program: the training comes first, and the recording goes on to its end.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "monitor/live/program_run.h"
#include "monitor/viewdata/data_source.h"

namespace memtap::viewdata {

struct LiveOptions {
  // --listen: the endpoint to bind and where to record (-o, --compact).
  std::string listen;
  std::string out;
  bool compact = false;
  ListenSecurity security;  // --keys, --insecure
  SessionLimits limits;     // --max-processes
  // --run: memtap run's options, the program among them (used when listen is "").
  RunOptions run;
  // The block index's queue, in events, and what may wait on disk beyond it, in bytes
  // (none: BlockIndexOptions' defaults); tests make them small to see what a flood does.
  std::optional<size_t> block_queue_events;
  std::optional<uint64_t> block_spool_bytes;
};

// Starts receiving (and, for --run, the program). nullptr with *error (one line) and
// *exit_code (127: the program cannot run; 2: anything else) when that fails.
std::unique_ptr<DataSource> start_live(const LiveOptions& options, std::string* error,
                                       int* exit_code);

}  // namespace memtap::viewdata
