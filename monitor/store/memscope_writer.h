// Writes a session to SQLite in the msMemScope DB format (docs/design.md, monitor/store).
//
// Table `memscope_dump` with msMemScope's columns and text encodings (or compact integer
// tables with memscope_dump a view: MemscopeWriterOptions::compact), `python_trace_{pid}`
// for Python tracer slices, plus memtap's own tables (`memtap_session`: one row per traced
// process; `memtap_meta`: key/value). Strings (define_string) and rows (append) go in from
// any one thread, in the order the Session gives them, and are written by the writer's own
// thread in batched transactions: a string defined before a row is known when it is written. The
// file is written under `<path>.partial` and renamed to
// `<path>` only by finish(), so an interrupted recording never looks complete.
//
// When the disk refuses a write (full, over quota, over the largest file allowed) or SQLite
// fails, the recording stops there: the file keeps the rows committed before, every later
// row is counted and dropped at once (none waits for a disk that may not come back, so the
// monitor's memory stays bounded), and stopped() says why and where, for the live view to
// say at once while its analyses go on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "monitor/model/dump_row.h"
#include "monitor/model/mem_event.h"
#include "monitor/model/process_info.h"

namespace memtap {

struct CpuShare;

// Where MemscopeWriter::finish() has got, for a progress display on another thread: the
// rows (rows_written of rows_queued), then steps that have no count.
enum class FinishStep : uint8_t {
  kRecording,      // finish() has not begun
  kWritingRows,    // the queue being written
  kCheckpointing,  // the write-ahead log going into the file
  kIndexing,       // building msMemScope's indexes (seconds for millions of rows)
  kClosing,        // the session tables, the journal, the rename
};

struct MemscopeWriterOptions {
  // Rows per transaction. Large transactions amortize the commit; a transaction is also
  // committed when it has been open for commit_interval_ms, so a crash loses little.
  size_t rows_per_transaction = 50000;
  int commit_interval_ms = 1000;
  // Write the rows as integers, into memtap_event and its tables (compact_schema.h), with
  // `memscope_dump` a VIEW of them: about 35 bytes a row without stacks, written at about
  // twice the rate of msMemScope's text rows (about 140 bytes). memtap, SQL and pandas read
  // the view as the table; MindStudio Insight and msMemScope's analyzer do not (they look
  // the table up with `type='table'`), so the default is msMemScope's own table.
  bool compact = false;
  // Rows the queue holds in memory (about 100 bytes a row: the default is about 100 MB)
  // before further rows queue on disk, in `<path>.partial.spool` (packed, about 15 bytes a
  // heap row), until the writer has caught up. 0: memory only.
  size_t max_memory_rows = size_t{1} << 20;
  // While this returns true the writer waits (1 ms at a time, its open transaction
  // committed) instead of writing, and rows keep queueing: the live analyses are behind and
  // come first. It stops waiting once the disk queue holds max_deferred_bytes, and when
  // finish() or the destructor asks it to stop. Called from the writer's thread. Empty:
  // never waits.
  std::function<bool()> live_behind;
  uint64_t max_deferred_bytes = uint64_t{1} << 30;
  // The writer's and its checkpointer's pacing behind the program (common/cpu_share.h);
  // shared with the recording that sets it. Null: they never pace.
  std::shared_ptr<const CpuShare> cpu_share;
  // Room kept on the recording's file system, in `<path>.partial.reserve`, for the file's
  // last words when the disk fills: half is given back when the recording stops (memtap_meta
  // says where it stopped), the rest in finish() (memtap_session and the final counts).
  // Without it a disk that someone else filled leaves no room to say why the file ends
  // where it does. Made only if the disk has the room at the start; 0: none.
  uint64_t reserve_bytes = 512 * 1024;
  // Test hook: caps the database at this many pages (PRAGMA max_page_count), so a test can
  // make SQLite fail with SQLITE_FULL exactly as on a full disk. 0: no cap.
  uint32_t max_page_count = 0;
};

class MemscopeWriter {
 public:
  // Creates `<path>.partial` (replacing a stale one) with the schema. On failure returns
  // nullptr and sets *error to one line naming the path and the reason.
  static std::unique_ptr<MemscopeWriter> create(const std::string& path, std::string* error);
  static std::unique_ptr<MemscopeWriter> create(const std::string& path,
                                                const MemscopeWriterOptions& options,
                                                std::string* error);
  // Without finish(): commits the rows already in the open transaction, drops the rest of
  // the queue, stops the thread and leaves `<path>.partial`.
  ~MemscopeWriter();
  MemscopeWriter(const MemscopeWriter&) = delete;
  MemscopeWriter& operator=(const MemscopeWriter&) = delete;

  // Session string `id` is `text` (the Session's StringSink): queued, like rows, so that
  // every row appended after it finds it.
  void define_string(uint32_t id, std::string_view text);

  // Queues copies of the rows (in memory, or on disk past max_memory_rows); never blocks on
  // SQLite. memscope_dump IDs are assigned in
  // append order, from 0; trace slice rows (python_trace_{pid}) take none. Once the
  // recording stopped (stopped()) the rows are counted but no longer queued.
  void append(const DumpRow* rows, size_t count);

  // Waits until every queued row is written, writes memtap_session and memtap_meta
  // (meta pairs are written as given, plus `complete`=`1`), creates the indexes, closes
  // the database and renames it to `path`. Returns false and sets *error if anything
  // failed (then `<path>.partial` stays, holding the rows committed before the failure).
  // A recording that stopped gets memtap_session and memtap_meta with the stop's keys
  // (recording_stopped, rows_recorded, rows_not_recorded, ...) where the disk has room for
  // them, and neither indexes nor `complete`: `memtap recover` finishes it once it has.
  bool finish(const std::vector<ProcessInfo>& processes,
              const std::vector<std::pair<std::string, std::string>>& meta, std::string* error);

  // Rows committed to the file so far.
  uint64_t rows_written() const;
  // Rows the writer has taken into SQLite: those committed and those in the transaction it
  // holds open until it is full or commit_interval_ms old, which finish() commits at once.
  uint64_t rows_taken() const;
  // Rows that waited on disk because SQLite fell behind (max_memory_rows).
  uint64_t rows_spooled() const;
  // Milliseconds the writer waited for the live analyses (MemscopeWriterOptions::live_behind).
  uint64_t deferred_ms() const;
  // Rows appended so far (trace slices included), written or not.
  uint64_t rows_queued() const;
  // How far finish() got. Any thread.
  FinishStep finish_step() const;
  // Why and where the recording stopped (reason "": it has not). Any thread.
  RecordingStop stopped() const;
  // Rows held in memory for the writer (not those on disk in the spool), for tests of the
  // bound.
  uint64_t rows_in_memory() const;
  const std::string& path() const;

 private:
  MemscopeWriter();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtap
