// Where the window's data comes from: a recording being loaded (replay), or a live session
// (memtap-gui --listen, memtap-gui --run). Either way the events go through the same
// engine (the Analyzer that `memtap report` runs) and the same block index, each on a
// thread of its own; the window asks them questions through post() and gets plain structs
// back. Nothing here knows Qt: the views' data is computed and tested without it.
//
// Threads of a source:
//   engine   the Analyzer's thread (replay: the loader, which reads the file in batches and
//            answers queries between them; live: the AnalysisThread). EngineQuery runs here.
//   blocks   the BlockIndex's thread (block_index.h): pairs MALLOC and FREE into blocks and
//            stores them in a temporary SQLite file. BlockQuery runs here.
//   receive  live only: the socket, the session and the traced program (ProgramRun), which
//            also writes the recording through its writer thread.
// Store queries (event pages, the flame chart's trace slices) open the recording read-only
// on whatever thread asks (database_path()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/model/mem_event.h"

namespace memtap {
struct CpuShare;
}

namespace memtap::viewdata {

class BlockIndex;

// What an engine query sees, on the engine's thread.
struct EngineView {
  const Analyzer& analyzer;
  const StringTable& strings;  // the ids of the analyzer's events
};
using EngineQuery = std::function<void(const EngineView&)>;

struct ProcessEntry {
  uint32_t pid = 0;
  std::string hostname;  // "" when the recording does not say
  std::string command_line;
  int32_t rank = -1;  // -1: not part of a distributed job
  int32_t world_size = -1;
  bool running = false;         // live: has not said Bye yet
  uint64_t events = 0;          // received from it (live), or read (replay)
  uint64_t events_dropped = 0;  // dropped in its agent, as it reported
};

struct SourceStatus {
  std::string title;         // the file's name; "live: ENDPOINT"; "run: COMMAND"
  bool live = false;         // events are still arriving from running processes
  bool loaded = false;       // replay: every event is in the engine; live: the recording is written
  double load_fraction = 0;  // replay: the part of the file read so far (0..1); live: 1
  uint64_t events = 0;       // events the engine has analysed
  double events_per_s = 0;   // live: events received per second, over the last second
  // Events that did not make it: dropped by the agents, lost on the way (events_lost), in
  // rejected messages; replay: also rows of the file that could not be read.
  uint64_t events_dropped = 0;
  // Live, while programs run: how far the window is behind them. The analyses behind the
  // newest event received, or the slowest program behind the present (its events still in
  // its agent's buffers: a sender that leaves the cores to the program sends nothing
  // meanwhile, and the analyses then look up to date), whichever is more.
  int64_t lag_ns = 0;
  // The program lag_ns is of, when its newer events wait in its agent's buffers (0: they
  // wait in memtap's own queues, where every program lags alike, or nothing lags).
  uint32_t lagging_pid = 0;
  uint64_t recording_bytes = 0;  // the recording's size on disk (with its write-ahead log)
  int64_t first_ns = 0;          // epoch ns of the first event analysed (0: none yet)
  int64_t last_ns = 0;           // and of the newest one
  std::vector<ProcessEntry> processes;
  std::string error;    // loading or recording failed: one line naming the file
  std::string warning;  // something the user should know (rows skipped, ...)
  // Replay of a recording its monitor never finished (Recording::unfinished): it holds what
  // was committed; `memtap recover` finishes it.
  bool unfinished = false;
  // Replay of a recording whose writer stopped while its session went on (a full disk;
  // Recording::stopped): why and where. Unfinished as well until `memtap recover` ran; a
  // recovered one still ends there. reason "": it did not stop.
  RecordingStop stopped;
  // Replay of a PyTorch snapshot whose trace has no time_us, or no trace (Recording::
  // torch_snapshot): its times are made up, which the bar says.
  bool synthetic_time = false;
  int exit_code = -1;  // --run: the program's exit code once it ended; -1 before
  // Live: nothing more will arrive (the program ended, or the recording was stopped) and the
  // recording is being completed; `rows_to_write` rows are still to go into the file (SQLite
  // can be seconds behind a flood: the window says so rather than look hung).
  bool writing = false;
  uint64_t rows_to_write = 0;
  // Live: the recording stopped (a full disk; `error` says why and where) while the analyses
  // go on: the file holds the events up to this time only (epoch ns), so nothing after it
  // is read back from there. 0: it did not stop.
  int64_t recorded_until_ns = 0;
  // Live, after the run: the block index fell behind the flood and dropped events (its
  // status says how many), and is being built again from the finished recording, which
  // has them all. `blocks_generation` counts the indexes blocks() has given: the views ask
  // again when it changes.
  bool blocks_reindexing = false;
  uint32_t blocks_generation = 0;
};

// Whether more events may still come: from running processes, or from a file still being
// read. A view with nothing to show says "yet" only then; a finished recording that holds
// nothing for it says so for good.
inline bool more_may_come(const SourceStatus& s) {
  return s.live || !s.loaded;
}

class DataSource {
 public:
  virtual ~DataSource() = default;

  // Runs `query` on the engine's thread, with the engine as it stands, between two batches
  // (it sees every event analysed so far). Any thread.
  virtual void post(EngineQuery query) = 0;
  // The block index; post block queries there (block_index.h).
  virtual BlockIndex& blocks() = 0;
  // Any thread.
  virtual SourceStatus status() const = 0;

  // The SQLite database the event table and the trace slices are read from, and its
  // memscope_dump-shaped table or view ("memscope_dump" or "leaks_dump"). Live: the
  // recording being written (`<out>.partial`, in WAL mode), then the finished file. A CSV
  // recording: a database this source made of it in its temporary directory. Any thread;
  // the path can change once (when a live recording is finished), so ask each time.
  virtual std::string database_path() const = 0;
  virtual std::string event_table() const = 0;
  // The file the user knows this session by: the recording opened (a CSV or snapshot too),
  // or the one a live session writes (its final name, while `.partial` is written).
  virtual std::string recording_path() const { return database_path(); }

  // Live sources: what the window's own threads keep to while the program runs
  // (common/cpu_share.h, CpuShare::view_permille). Replays: none.
  virtual std::shared_ptr<const CpuShare> cpu_share() const { return nullptr; }

  // Live sources: stop receiving and write the recording (--listen: as Ctrl-C does for
  // memtap record; --run: only once the program ended, see live_source.h). Replay: nothing.
  virtual void stop() {}
};

// A recording of any format memtap reads (recording_reader.h), loaded on a thread of its
// own: the engine can be asked as soon as the first batch is in, so the curves show while
// the rest loads. nullptr with *error (one line naming the file) when the file cannot be
// opened at all; a failure later shows in status().error.
std::unique_ptr<DataSource> open_recording(const std::string& path, std::string* error);

}  // namespace memtap::viewdata
