// msMemScope's database, and memtap's (see sqlite_dump_source.h).
#include "monitor/store/reader/sqlite_dump_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <limits>
#include <system_error>
#include <thread>
#include <vector>

#include "monitor/store/memtap_tables.h"
#include "monitor/store/reader/compact_table_scan.h"
#include "monitor/store/reader/dump_table_scan.h"
#include "monitor/store/reader/memtap_session_source.h"
#include "monitor/store/reader/sqlite_access.h"
#include "monitor/store/reader/string_interner.h"
#include "monitor/store/reader/text_values.h"
#include "monitor/store/reader/time_slices.h"

namespace memtap::reader {
namespace {

// A rowid span is only a hint of the row count (ids may skip): reserve no more than this,
// and no more rows than the file could hold at kMinRowBytes each (a row's cell: its
// pointer, lengths, rowid and column types), so that two rows with ids 40 million apart
// do not reserve 5 GB (which a machine without that much memory refuses, and the reader
// does not catch).
constexpr int64_t kMaxReserve = 50'000'000;
constexpr int64_t kMinRowBytes = 8;
constexpr unsigned kMaxThreads = 8;

// The database's bytes with its write-ahead log's (a live recording's newest rows are
// there); kMaxReserve rows' worth when it cannot say.
int64_t file_bytes(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return kMaxReserve * kMinRowBytes;
  int64_t bytes = st.st_size;
  if (::stat((path + "-wal").c_str(), &st) == 0) bytes += st.st_size;
  return bytes;
}

// The dump table's name: memscope_dump, else the older leaks_dump. Lists the tables when
// there is neither.
bool find_dump_table(const std::string& path, const std::vector<std::string>& tables,
                     std::string* dump_table, std::string* error) {
  for (const char* preferred : {"memscope_dump", "leaks_dump"}) {
    for (const std::string& table : tables) {
      if (equals_ignore_case(table, preferred)) {
        *dump_table = table;
        return true;
      }
    }
  }
  *error =
      path + ": no memscope_dump or leaks_dump table in this SQLite database (" +
      (tables.empty() ? std::string("it has no tables") : "its tables: " + join_names(tables)) +
      ")";
  return false;
}

bool rowid_bound(const std::string& path, sqlite3* db, const DumpQuery& query, const char* fn,
                 int64_t* value, std::string* error) {
  // One min() or max() per query: SQLite answers that from the b-tree's edge, not a scan.
  return for_each_row(
      path, db, std::string("SELECT ") + fn + "(rowid) FROM " + quote_identifier(query.table),
      [&](sqlite3_stmt* s) { *value = sqlite3_column_int64(s, 0); }, error);
}

// The rows a read of the whole table visits, for its progress: the span of rowids [first,
// last]. A filtered read visits an unknown part of them, so it says no total.
void note_rows_total(int64_t first, int64_t last, const SqliteReadOptions& options,
                     ReadProgress* progress) {
  const RecordingFilter& filter = options.filter;
  if (filter.pid || filter.max_ts_ns != std::numeric_limits<int64_t>::max() || last < first) {
    return;
  }
  progress->rows_total.store(uint64_t(last) - uint64_t(first) + 1, std::memory_order_relaxed);
}

// Decodes the rows with rowids in [first, last] (all rows when `whole`) on `db`: the dump
// table's or memtap_event's scan, so both share the split below.
using ScanPart = std::function<bool(sqlite3* db, bool whole, int64_t first, int64_t last,
                                    std::vector<MemEvent>* events, StringTable* strings,
                                    RowProblems* problems, std::string* error)>;

// One thread's share of a large table: a rowid range, decoded on its own connection.
struct Part {
  bool whole = true;
  int64_t first = 0;
  int64_t last = 0;
  std::vector<MemEvent> own_events;
  StringTable own_strings;
  RowProblems problems;
  std::string error;
  bool ok = false;
};

void read_part(const std::string& path, const ScanPart& scan, Part* part,
               std::vector<MemEvent>* events, StringTable* strings) {
  DbHandle handle;
  if (!open_for_reading(path, &handle, &part->error)) return;
  part->ok = scan(handle.db, part->whole, part->first, part->last, events, strings, &part->problems,
                  &part->error);
}

// A part's events refer to its own strings: rewrite them into the recording's, then move
// the events behind those already there (parts are in rowid order, so file order holds).
void adopt(Part* part, Recording* out) {
  StringInterner interner(&out->strings);
  std::vector<uint32_t> ids(part->own_strings.size());
  for (uint32_t id = 1; id < ids.size(); ++id) ids[id] = interner.intern(part->own_strings.get(id));
  rewrite_string_ids(&part->own_events, ids);
  out->events.insert(out->events.end(), part->own_events.begin(), part->own_events.end());
  part->own_events = {};
}

// The rows with rowids in [first, last] in file order. A large table is split by rowid
// over the cores: the cost is per row (SQLite's record decoding and ours), not page reads,
// so it parallelises.
bool read_file_order(const std::string& path, sqlite3* db, int64_t first, int64_t last,
                     const ScanPart& scan, const SqliteReadOptions& options, Recording* out,
                     RowProblems* problems, std::string* error) {
  // Rowids may be negative or far apart: 128-bit arithmetic, and no split of a span that
  // large (it says nothing about the row count anyway).
  const __int128 wide_span = last >= first ? __int128(last) - first + 1 : 0;
  const int64_t span = int64_t(std::min<__int128>(wide_span, int64_t(1) << 40));
  // Room for every row up front: growing a vector of ten million events by doubling would
  // copy most of them twice. Pages reserved but never written cost no memory.
  const int64_t max_reserve = std::min(kMaxReserve, file_bytes(path) / kMinRowBytes);
  out->events.reserve(out->events.size() + size_t(std::min(span, max_reserve)));
  const unsigned cores = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
  const int64_t by_size = span / std::max<int64_t>(1, options.min_rows_per_thread);
  const unsigned threads =
      wide_span == span ? unsigned(std::clamp<int64_t>(
                              by_size, 1, options.max_threads > 0 ? options.max_threads : cores))
                        : 1;

  std::vector<Part> parts(threads);
  for (unsigned k = 0; k < threads; ++k) {
    parts[k].whole = threads == 1;
    parts[k].first = first + span * k / threads;
    parts[k].last = first + span * (k + 1) / threads - 1;
  }
  if (threads == 1) {
    parts[0].ok = scan(db, parts[0].whole, parts[0].first, parts[0].last, &out->events,
                       &out->strings, &parts[0].problems, &parts[0].error);
  } else {
    std::vector<std::thread> workers;
    std::vector<Part*> not_started;
    for (unsigned k = 1; k < threads; ++k) {
      Part* part = &parts[k];
      part->own_events.reserve(size_t(std::min(span / threads + 1, max_reserve)));
      try {
        workers.emplace_back([&path, &scan, part] {
          read_part(path, scan, part, &part->own_events, &part->own_strings);
        });
      } catch (const std::system_error&) {
        not_started.push_back(part);  // no thread to be had: read it here instead
      }
    }
    read_part(path, scan, &parts[0], &out->events, &out->strings);  // straight into `out`
    for (Part* part : not_started) {
      read_part(path, scan, part, &part->own_events, &part->own_strings);
    }
    for (std::thread& worker : workers) worker.join();
  }
  for (Part& part : parts) {
    if (!part.ok) {
      *error = part.error;
      return false;
    }
  }
  for (unsigned k = 0; k < threads; ++k) {
    add_problems(parts[k].problems, problems);
    if (k > 0) adopt(&parts[k], out);
  }
  return true;
}

// The dump table (memscope_dump / leaks_dump) through its text columns.
bool read_dump_table(const std::string& path, sqlite3* db, const std::string& dump_table,
                     const SqliteReadOptions& options, Recording* out, RowProblems* problems,
                     std::string* error) {
  DumpQuery query;
  int64_t ts_factor = 0;
  if (!plan_dump_query(path, db, dump_table, &query, error,
                       !options.filter.skip_names_and_stacks) ||
      !dump_timestamp_factor(path, db, query, &ts_factor, error)) {
    return false;
  }
  const bool file_order = !options.time_order && !options.drain;
  int64_t first = 0;
  int64_t last = -1;
  if ((file_order || options.progress != nullptr) &&
      (!rowid_bound(path, db, query, "min", &first, error) ||
       !rowid_bound(path, db, query, "max", &last, error))) {
    return false;
  }
  std::atomic<uint64_t>* rows_read = nullptr;
  if (options.progress != nullptr) {
    rows_read = &options.progress->rows_read;
    note_rows_total(first, last, options, options.progress);
  }
  if (file_order) {
    const ScanPart scan = [&](sqlite3* part_db, bool whole, int64_t part_first, int64_t part_last,
                              std::vector<MemEvent>* events, StringTable* strings,
                              RowProblems* part_problems, std::string* part_error) {
      DumpScan part;
      part.ts_factor = ts_factor;
      part.filter = options.filter;
      part.whole_table = whole;
      part.first_rowid = part_first;
      part.last_rowid = part_last;
      part.rows_read = rows_read;
      return scan_dump_rows(path, part_db, query, part, events, strings, part_problems, part_error);
    };
    return read_file_order(path, db, first, last, scan, options, out, problems, error);
  }
  if (options.time_order && options.drain) {
    bool sliced = false;
    if (!read_time_slices(path, db, query, ts_factor, options, out, problems, &sliced, error))
      return false;
    if (sliced) return true;
  }
  DumpScan scan;
  scan.time_order = options.time_order;
  scan.ts_factor = ts_factor;
  scan.drain = options.drain;
  scan.batch_events = options.batch_events;
  scan.filter = options.filter;
  scan.rows_read = rows_read;
  return scan_dump_rows(path, db, query, scan, &out->events, &out->strings, problems, error);
}

// memtap's compact tables, read from their integers rather than through the view
// (compact_table_scan.h). The format keeps the name memscope_dump: to the user it is the
// same table, and it is what the view is called.
bool read_compact_tables(const std::string& path, sqlite3* db, const SqliteReadOptions& options,
                         Recording* out, RowProblems* problems, std::string* error) {
  CompactFile file;
  if (!load_compact_file(path, db, &file, error)) return false;
  out->format = kFormatMemscopeDump;
  if (!file.has_rows) return true;
  std::atomic<uint64_t>* rows_read = nullptr;
  if (options.progress != nullptr) {
    rows_read = &options.progress->rows_read;
    note_rows_total(file.first_id, file.last_id, options, options.progress);
  }
  if (!options.time_order && !options.drain) {
    // Rows past the filter's time bound (by the chunks) are not even split among threads.
    const int64_t last = compact_scan_last_id(file, options.filter);
    const ScanPart scan = [&](sqlite3* part_db, bool whole, int64_t first, int64_t part_last,
                              std::vector<MemEvent>* events, StringTable* strings,
                              RowProblems* part_problems, std::string* part_error) {
      CompactScan part;
      part.filter = options.filter;
      part.whole_table = whole;
      part.first_id = first;
      part.last_id = part_last;
      part.rows_read = rows_read;
      return scan_compact_rows(path, part_db, file, part, events, strings, part_problems,
                               part_error);
    };
    return read_file_order(path, db, file.first_id, last, scan, options, out, problems, error);
  }
  CompactScan scan;
  scan.time_order = options.time_order;
  scan.drain = options.drain;
  scan.batch_events = options.batch_events;
  scan.filter = options.filter;
  scan.rows_read = rows_read;
  return scan_compact_rows(path, db, file, scan, &out->events, &out->strings, problems, error);
}

}  // namespace

bool read_sqlite_recording(const std::string& path, const SqliteReadOptions& options,
                           Recording* out, RowProblems* problems, std::string* error) {
  if (!check_sqlite_length(path, error)) return false;
  DbHandle handle;
  if (!open_for_reading(path, &handle, error)) return false;

  std::vector<std::string> tables;
  if (!for_each_row(
          path, handle.db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
          [&](sqlite3_stmt* s) { tables.push_back(column_string(s, 0)); }, error)) {
    return false;
  }
  const bool compact = has_compact_tables(tables);
  std::string dump_table;
  if (!compact && !find_dump_table(path, tables, &dump_table, error)) return false;
  for (const std::string& table : tables) {
    if (equals_ignore_case(table, "memtap_session") &&
        !read_memtap_session(path, handle.db, &out->processes, error)) {
      return false;
    }
    if (equals_ignore_case(table, "memtap_meta")) {
      std::vector<std::pair<std::string, std::string>> meta;
      if (!for_each_row(
              path, handle.db, "SELECT key, value FROM memtap_meta",
              [&](sqlite3_stmt* s) { meta.emplace_back(column_string(s, 0), column_string(s, 1)); },
              error)) {
        return false;
      }
      bool complete = false;
      for (const auto& [key, value] : meta) {
        complete = complete || (key == "complete" && value == "1");
        for (const LiveInputKey& k : kLiveInputKeys) {
          if (key != k.meta_key) continue;
          out->live_input.known = true;
          out->live_input.*k.field = strtoull(value.c_str(), nullptr, 10);
        }
        torch_snapshot_from_meta(key, value, &out->torch_snapshot);
      }
      out->unfinished = !complete;
      out->stopped = recording_stop_from_meta(meta);
    }
  }
  if (compact) return read_compact_tables(path, handle.db, options, out, problems, error);
  out->format =
      equals_ignore_case(dump_table, "leaks_dump") ? kFormatLeaksDump : kFormatMemscopeDump;
  return read_dump_table(path, handle.db, dump_table, options, out, problems, error);
}

}  // namespace memtap::reader
