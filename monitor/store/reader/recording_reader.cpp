// Any recording memtap opens, read into one time-ordered MemEvent stream (see
// recording_reader.h). This file recognises the format and finishes what every format
// shares: time order, FREEs completed, processes, the skipped-row summary.
#include "monitor/store/reader/recording_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <unordered_set>

#include "monitor/store/reader/csv_header.h"
#include "monitor/store/reader/csv_reader.h"
#include "monitor/store/reader/event_order.h"
#include "monitor/store/reader/free_matcher.h"
#include "monitor/store/reader/memory_record_source.h"
#include "monitor/store/reader/msmemscope_csv_source.h"
#include "monitor/store/reader/operator_memory_source.h"
#include "monitor/store/reader/row_problems.h"
#include "monitor/store/reader/sqlite_dump_source.h"
#include "monitor/store/reader/torch/torch_snapshot_source.h"

namespace memtap {
namespace {

using namespace reader;

// What a file is, by its first bytes: SQLite databases start with a magic string, pickles
// with PROTO; anything else is read as a CSV (which says what it expected if it is none).
enum class FileKind { kSqlite, kPickle, kText };

bool sniff(const std::string& path, FileKind* kind, std::string* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = path + ": is a directory, not a recording file";
    return false;
  }
  if (st.st_size == 0) {
    *error = path + ": empty file (0 bytes); expected " + expected_formats_text();
    return false;
  }
  static constexpr char kMagic[] = "SQLite format 3";  // with its NUL: 16 bytes
  char head[sizeof kMagic] = {};
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  file.read(head, sizeof head);
  const auto got = size_t(file.gcount());
  if (got == sizeof head && std::memcmp(head, kMagic, sizeof head) == 0) {
    *kind = FileKind::kSqlite;
  } else if (is_pickle_head(head, got)) {
    *kind = FileKind::kPickle;
  } else {
    *kind = FileKind::kText;
  }
  return true;
}

bool read_csv(const std::string& path, Recording* out, RowProblems* problems, std::string* error) {
  std::string open_error;
  const std::unique_ptr<CsvReader> csv = CsvReader::open(path, &open_error);
  if (csv == nullptr) {
    *error = path + ": " + open_error;
    return false;
  }
  std::vector<std::string_view> fields;
  const CsvReader::Next first = csv->next(&fields, &open_error);
  if (first == CsvReader::Next::kError) {
    *error = path + ": " + open_error;
    return false;
  }
  if (first == CsvReader::Next::kEnd) {
    *error = path + ": no header line (only blank lines); expected " + expected_formats_text();
    return false;
  }
  const CsvHeader header(fields);
  switch (classify_header(header)) {
    case CsvKind::kMsmemscope:
      out->format = kFormatMsmemscopeCsv;
      return read_msmemscope_csv(csv.get(), header, path, out, problems, error);
    case CsvKind::kOperatorMemory:
      out->format = kFormatOperatorMemoryCsv;
      return read_operator_memory_csv(csv.get(), header, path, out, problems, error);
    case CsvKind::kMemoryRecord:
      out->format = kFormatMemoryRecordCsv;
      return read_memory_record_csv(csv.get(), header, path, out, problems, error);
    case CsvKind::kUnknown:
      break;
  }
  *error = path + ": not a recording memtap can read: expected " + expected_formats_text() +
           "; its first line is " + header.text();
  return false;
}

// The formats read whole: a CSV or a PyTorch snapshot.
bool read_held(const std::string& path, FileKind kind, Recording* out, RowProblems* problems,
               std::string* error) {
  return kind == FileKind::kPickle ? read_torch_snapshot(path, out, problems, error)
                                   : read_csv(path, out, problems, error);
}

bool frees_incomplete(const std::vector<MemEvent>& events) {
  return std::any_of(events.begin(), events.end(), [](const MemEvent& e) {
    return e.kind == MemEventKind::kFree && (e.size_bytes == 0 || e.device == kNoDevice);
  });
}

// One RecordedProcess per pid with events and no memtap_session row, in order of first
// event.
class ProcessCollector {
 public:
  explicit ProcessCollector(const Recording& recording) {
    for (const RecordedProcess& process : recording.processes) known_.insert(process.pid);
  }
  void note(const std::vector<MemEvent>& events, Recording* out) {
    for (const MemEvent& event : events) {
      if (event.pid == last_pid_) continue;
      last_pid_ = event.pid;
      if (known_.insert(event.pid).second) out->processes.emplace_back().pid = event.pid;
    }
  }

 private:
  std::unordered_set<uint32_t> known_;
  uint32_t last_pid_ = UINT32_MAX;
};

bool finish(const std::string& path, const RowProblems& problems, Recording* out,
            std::string* error) {
  if (nothing_readable(problems)) {
    *error = problems_error(path, problems);
    return false;
  }
  out->rows_read = problems.rows;
  out->rows_skipped = problems.skipped;
  out->warning = problems_warning(path, problems);
  return true;
}

// stream_recording and stream_recording_range: `filter` null reads everything.
bool stream_events(const std::string& path, const RecordingFilter* filter, size_t batch_events,
                   Recording* out, const EventBatchFn& on_batch, std::string* error,
                   ReadProgress* progress) {
  *out = Recording{};
  batch_events = std::max<size_t>(batch_events, 1);
  FileKind kind = FileKind::kText;
  if (!sniff(path, &kind, error)) return false;
  RowProblems problems;
  if (kind != FileKind::kSqlite) {
    // CSVs and snapshots are not in time order and carry no index: read whole, then hand
    // out in batches.
    if (!read_held(path, kind, out, &problems, error) || !finish(path, problems, out, error)) {
      return false;
    }
    std::vector<MemEvent> events = std::move(out->events);
    out->events.clear();
    sort_by_time(&events);
    if (frees_incomplete(events)) complete_frees(&events);
    if (filter != nullptr) {
      std::erase_if(events, [filter](const MemEvent& e) { return !filter->passes(e); });
    }
    ProcessCollector(*out).note(events, out);
    for (size_t at = 0; at < events.size(); at += batch_events) {
      const size_t count = std::min(batch_events, events.size() - at);
      if (!on_batch(std::span<const MemEvent>(events.data() + at, count))) break;
    }
    return true;
  }

  std::optional<ProcessCollector> processes;  // made once memtap_session has been read
  FreeMatcher matcher;
  bool stopped = false;
  SqliteReadOptions options;
  options.time_order = true;
  options.batch_events = batch_events;
  options.progress = progress;
  if (filter != nullptr) options.filter = *filter;
  options.drain = [&] {
    if (!processes) processes.emplace(*out);
    for (MemEvent& event : out->events) matcher.observe(&event);
    processes->note(out->events, out);
    stopped = !on_batch(out->events);
    out->events.clear();
    return !stopped;
  };
  if (!read_sqlite_recording(path, options, out, &problems, error)) return false;
  if (!stopped && !out->events.empty()) options.drain();
  return finish(path, problems, out, error);
}

}  // namespace

bool read_recording(const std::string& path, Recording* out, std::string* error,
                    ReadProgress* progress) {
  *out = Recording{};
  FileKind kind = FileKind::kText;
  if (!sniff(path, &kind, error)) return false;
  RowProblems problems;
  SqliteReadOptions options;
  options.progress = progress;
  const bool read = kind == FileKind::kSqlite
                        ? read_sqlite_recording(path, options, out, &problems, error)
                        : read_held(path, kind, out, &problems, error);
  if (!read || !finish(path, problems, out, error)) return false;
  // Every row is read: the rowid span said at most this many.
  if (progress != nullptr) {
    progress->rows_total.store(progress->rows_read.load(std::memory_order_relaxed),
                               std::memory_order_relaxed);
  }
  sort_by_time(&out->events);
  if (frees_incomplete(out->events)) complete_frees(&out->events);
  ProcessCollector(*out).note(out->events, out);
  return true;
}

bool stream_recording(const std::string& path, size_t batch_events, Recording* out,
                      const EventBatchFn& on_batch, std::string* error, ReadProgress* progress) {
  return stream_events(path, nullptr, batch_events, out, on_batch, error, progress);
}

bool stream_recording_range(const std::string& path, const RecordingFilter& filter,
                            size_t batch_events, Recording* out, const EventBatchFn& on_batch,
                            std::string* error) {
  return stream_events(path, &filter, batch_events, out, on_batch, error, nullptr);
}

}  // namespace memtap
