// Any recording memtap opens, read into one time-ordered MemEvent stream.
//
// `memtap report` and `memtap replay` take files written by memtap itself, by Huawei's
// msMemScope (over its versions) and by the CANN / torch_npu profiler. This is their one
// entry point: the format is recognised by content, never by file name; every row becomes
// MemEvents in the vocabulary of monitor/model/mem_event.h; events come out in time order.
//
//   format                 what it is
//   memscope_dump          SQLite, table memscope_dump (msMemScope, memtap; + memtap_session)
//                          or memtap's compact tables, memscope_dump then being their view
//   leaks_dump             SQLite, table leaks_dump (msMemScope before its rename)
//   msmemscope_csv         msMemScope's CSV export: ID,Event,Event Type,Name,Timestamp(ns),...
//   operator_memory_csv    CANN / torch_npu operator_memory.csv: a block per row
//   memory_record_csv      CANN / torch_npu memory_record.csv: pool totals over time
//   torch_snapshot         PyTorch's CUDA memory snapshot, a pickle (torch.cuda.memory.
//                          _dump_snapshot, or the bare list of memory_snapshot()): its trace
//                          as PTA events, its segments as the pool at the end
//
// Mapping per format: dump_row_decoder.h (both dump forms), compact_table_scan.h (the compact
// tables, read from their integers rather than through the view), operator_memory_source.h,
// memory_record_source.h, torch/snapshot_events.h (PyTorch snapshots).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "monitor/model/mem_event.h"
#include "monitor/model/torch_snapshot_facts.h"
#include "monitor/store/reader/read_progress.h"

namespace memtap {

inline constexpr const char* kFormatMemscopeDump = "memscope_dump";
inline constexpr const char* kFormatLeaksDump = "leaks_dump";
inline constexpr const char* kFormatMsmemscopeCsv = "msmemscope_csv";
inline constexpr const char* kFormatOperatorMemoryCsv = "operator_memory_csv";
inline constexpr const char* kFormatMemoryRecordCsv = "memory_record_csv";
inline constexpr const char* kFormatTorchSnapshot = "torch_snapshot";

struct Recording {
  // Sorted by ts_ns; events of equal time keep the file's order. A FREE that lacked its
  // size or device in the file has its MALLOC's (free_matcher.h).
  std::vector<MemEvent> events;
  StringTable strings;  // names, owners and stacks the events refer to
  // From memtap_session where the file has one; a pid with events but no session row (and
  // every pid of other files) gets a RecordedProcess with just its pid.
  std::vector<RecordedProcess> processes;
  std::string format;         // one of the kFormat* names
  uint64_t rows_read = 0;     // data rows in the file (a CSV header is not one)
  uint64_t rows_skipped = 0;  // rows that could not be understood; they gave no event
  // One line about the skipped rows, naming the file and the first bad row; "" if none.
  std::string warning;
  // A memtap recording its monitor never finished (killed, or the machine went down: a
  // `.partial` file without memtap_meta's complete=1). It holds what was committed, no
  // index and no memtap_session; `memtap recover` finishes it.
  bool unfinished = false;
  // From memtap_meta, when the recording kept it.
  LiveInput live_input;
  // A memtap recording that stopped while its session went on (a full disk): why, and
  // where; reason "" otherwise. Such a file is unfinished too.
  RecordingStop stopped;
  // A PyTorch snapshot's: made-up times, the blocks there before its trace (known: false
  // for every other format).
  TorchSnapshotFacts torch_snapshot;
};

// Reads `path` into *out (replacing what it held). False with *error, one line naming the
// file and what is wrong, when the file cannot be read at all: missing, empty, not a
// known format (the message lists the expected ones), a corrupt or truncated database, a
// database without a memscope_dump / leaks_dump table (the message lists its tables), a
// CSV header without a column its format needs, or rows none of which could be read.
// `progress`, when given, counts a database's rows as they are read (read_progress.h).
bool read_recording(const std::string& path, Recording* out, std::string* error,
                    ReadProgress* progress = nullptr);

// Gets a batch of events, in time order across batches. Return false to stop reading.
using EventBatchFn = std::function<bool(std::span<const MemEvent> batch)>;

// read_recording for files too large to hold: delivers the events in batches of about
// `batch_events` instead of keeping them (out->events stays empty). out->strings grows as
// batches arrive, so a batch's string ids are valid in out->strings when it is delivered;
// processes, counts and warning are complete when this returns. A database streams with
// memory bounded by the batch and the live blocks; a CSV is held whole while it is read
// (the CSV formats are small, and their rows are not in time order), and so is a PyTorch
// snapshot (its pool at the end is known only once it is all read). Stopping early returns
// true. `progress` as in read_recording.
bool stream_recording(const std::string& path, size_t batch_events, Recording* out,
                      const EventBatchFn& on_batch, std::string* error,
                      ReadProgress* progress = nullptr);

// Which events stream_recording_range delivers: all of them by default.
struct RecordingFilter {
  std::optional<uint32_t> pid;                              // only this process's
  int64_t max_ts_ns = std::numeric_limits<int64_t>::max();  // only those at or before
  // Leaves a database's Name and call-stack columns unread (their ids are 0), for readers
  // that need only times, sizes and owners: stacks are most of a real row's bytes.
  bool skip_names_and_stacks = false;

  bool passes(const MemEvent& event) const {
    return (!pid || event.pid == *pid) && event.ts_ns <= max_ts_ns;
  }
};

// stream_recording of the events `filter` lets through, for reading one process's past
// again (store_detail_source.h). A database applies the filter in its query where the
// columns compare as numbers (declared INTEGER, as memtap and msMemScope declare them), so
// with the timestamp index of a finished memtap or msMemScope file only the rows up to
// max_ts_ns are visited, in index order, and no sort is needed. A live `.partial` file has
// no index until the writer finishes: SQLite then scans the table and sorts the rows that
// pass. Whatever SQL cannot filter is filtered here after decoding, so the events are the
// same either way: those stream_recording would deliver, minus the ones filtered out
// (rows_read counts the rows the query returned). A compact file (no index) has its pid
// and time bound in the query, and its chunk table stops the scan after the last rows that
// may be at or before max_ts_ns. A CSV is read whole and then filtered.
bool stream_recording_range(const std::string& path, const RecordingFilter& filter,
                            size_t batch_events, Recording* out, const EventBatchFn& on_batch,
                            std::string* error);

}  // namespace memtap
