// Reads the flame chart's spans (flame_data.h) for a time range from a recording, on the
// window's store thread (EngineClient::askStore), however large the recording is.
//
// Neither source has an index to answer "what overlaps [t0, t1]": python_trace_<pid> holds
// its times as TEXT and no index, and the allocations' stacks are a column of the event
// table that most rows leave empty. So the reader keeps an index of its own, in SQLite's
// temporary database of its read-only connection (a file in $TMPDIR, not memory): one small
// integer row per slice and per allocation with a Python stack. It is built a bounded slice
// of the recording per read() (rows_per_read), so a large file never holds the store thread
// for long, and a live recording is followed as it grows (rows after the last one indexed).
//
// A read returns only what a redraw needs:
//   - slices: those overlapping the range and at least a pixel wide. A slice's row holds
//     its "level", floor(log2(duration)); within a level a slice overlapping [t0, t1] starts
//     in [t0 - 2^(level+1), t1], so each level is one index range, and levels below a pixel
//     are not visited. Widest levels first, up to max_spans.
//   - allocation stacks: at most about two samples a pixel (the first of each bucket), merged
//     into spans (merge_samples), then bounded to max_spans.
// Distinct functions and stacks are kept in memory (a program has thousands, not millions).
//
// The tables are untrusted (any file opens): a row whose time does not fit int64 nanoseconds
// (a microsecond file's value of more than 16 digits), a slice that starts before the epoch or
// lasts longer than 2^62 ns (146 years), and a table whose name is not python_trace_ and a pid
// (digits, at most 2^32 - 1) are left out; a slice that ends before it starts is taken as
// lasting 0 ns. A request's range may be anything: its arithmetic saturates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "monitor/store/reader/timestamp_unit.h"
#include "monitor/viewdata/flame_data.h"

struct sqlite3;

namespace memtap::viewdata {

struct FlameRequest {
  uint32_t pid = 0;
  int64_t t0_ns = 0;
  int64_t t1_ns = 0;
  int width_px = 1000;  // the chart's width: a pixel is (t1 - t0) / width_px
  size_t max_spans = 4000;
  // Rows of each source table the index takes in per read (its bound on one call's work).
  size_t rows_per_read = 200000;
};

class FlameReader {
 public:
  // `event_table`: DataSource::event_table() ("memscope_dump", "leaks_dump"). Opens the file
  // on the first read.
  FlameReader(std::string path, std::string event_table);
  ~FlameReader();
  FlameReader(const FlameReader&) = delete;
  FlameReader& operator=(const FlameReader&) = delete;

  const std::string& path() const { return path_; }

  // One thread at a time (the store's).
  FlameData read(const FlameRequest& request);

 private:
  struct TraceTable {
    std::string name;
    uint32_t pid = 0;
    int64_t last_rowid = 0;
    int64_t max_rowid = 0;
  };

  bool open(std::string* error);
  // Takes in up to rows_per_read more rows of each source; sets *fraction (0..1) of all.
  bool index_more(size_t rows_per_read, double* fraction, std::string* error);
  bool index_traces(size_t rows_per_read, std::string* error);
  bool index_stacks(size_t rows_per_read, std::string* error);
  uint32_t function_id(const FlameFunction& f);
  int64_t stack_id(const std::string& text);

  void read_slices(const FlameRequest& request, FlameData* data, std::string* error);
  void read_samples(const FlameRequest& request, FlameData* data, std::string* error);

  std::string path_;
  std::string event_table_;
  sqlite3* db_ = nullptr;
  bool compact_ = false;        // memtap_event holds the rows (memscope_dump is its view)
  reader::TimestampUnit unit_;  // decided by the file's first positive time (compact: ns)
  std::vector<TraceTable> traces_;
  int64_t last_event_id_ = 0;  // the event table is indexed up to this ID
  int64_t max_event_id_ = 0;
  // Interned: functions by "file\nfunction" (the line is the span's), stacks by their text
  // (text tables) or their memtap_string id (compact), as frames outermost first.
  std::unordered_map<std::string, uint32_t> function_ids_;
  std::vector<FlameFunction> functions_;
  std::unordered_map<std::string, int64_t> stack_ids_;
  std::unordered_map<int64_t, int64_t> compact_stack_ids_;
  std::vector<std::vector<std::pair<uint32_t, int>>> stacks_;
};

}  // namespace memtap::viewdata
