// See time_slices.h.
#include "monitor/store/reader/time_slices.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "monitor/store/reader/string_interner.h"

namespace memtap::reader {
namespace {

constexpr unsigned kMaxWorkers = 8;
constexpr size_t kBatchesAhead = 2;  // per slice not yet being handed on
constexpr int64_t kMaxSlices = 4096;

// A batch a worker decoded: its events, with the text of the slice's string ids that first
// appeared in it (a slice's ids are dense from 1).
struct SliceBatch {
  std::vector<MemEvent> events;
  std::vector<std::string> new_strings;
};

struct Slice {
  bool null_only = false;
  std::optional<int64_t> at_least, below;
  std::deque<SliceBatch> batches;
  bool done = false;
  bool ok = true;
  std::string error;
  RowProblems problems;
};

struct Shared {
  std::mutex mutex;
  std::condition_variable changed;  // a batch, a slice done, the slice handed on, or stop
  std::vector<Slice> slices;
  size_t current = 0;  // the slice being handed on: its worker never waits for room
  bool stop = false;
  // Batch vectors handed on, for the workers to fill again: a fresh one page-faults its
  // way through 16 MB a batch.
  std::vector<std::vector<MemEvent>> spare;
  std::atomic<size_t> next{0};  // the next slice for a worker to take
};

bool has_timestamp_index(sqlite3* db, const DumpQuery& query) {
  // Any index whose first column is the timestamp walks it in order; a table without one
  // would be scanned and sorted once per slice.
  std::string column = query.timestamp;  // quoted: "Timestamp(ns)"
  if (column.size() >= 2 && column.front() == '"') column = column.substr(1, column.size() - 2);
  const char* sql =
      "SELECT i.name FROM pragma_index_list(?) l, pragma_index_info(l.name) i WHERE i.seqno = 0";
  Statement s;
  if (sqlite3_prepare_v2(db, sql, -1, &s.stmt, nullptr) != SQLITE_OK) return false;
  sqlite3_bind_text(s.stmt, 1, query.table.c_str(), -1, SQLITE_TRANSIENT);
  bool found = false;
  while (sqlite3_step(s.stmt) == SQLITE_ROW) {
    const char* name = reinterpret_cast<const char*>(sqlite3_column_text(s.stmt, 0));
    if (name != nullptr && column == name) found = true;
  }
  return found;
}

// The first numeric timestamp in `order` ("" ascending, "DESC"), through the index.
bool numeric_edge(const std::string& path, sqlite3* db, const DumpQuery& query, const char* order,
                  bool* any, int64_t* value, std::string* error) {
  const std::string sql = "SELECT " + query.timestamp + " FROM " + quote_identifier(query.table) +
                          " WHERE " + query.timestamp +
                          " BETWEEN -9223372036854775808 AND 9223372036854775807 ORDER BY " +
                          query.timestamp + " " + order + " LIMIT 1";
  *any = false;
  return for_each_row(
      path, db, sql,
      [&](sqlite3_stmt* s) {
        *any = true;
        *value = sqlite3_column_int64(s, 0);
      },
      error);
}

bool rows_hint(const std::string& path, sqlite3* db, const DumpQuery& query, int64_t* rows,
               std::string* error) {
  // One min() or max() per query: SQLite answers that from the b-tree's edge; both in one
  // query scan the table.
  int64_t first = 0, last = -1;
  const std::string table = quote_identifier(query.table);
  if (!for_each_row(
          path, db, "SELECT min(rowid) FROM " + table,
          [&](sqlite3_stmt* s) { first = sqlite3_column_int64(s, 0); }, error) ||
      !for_each_row(
          path, db, "SELECT max(rowid) FROM " + table,
          [&](sqlite3_stmt* s) { last = sqlite3_column_int64(s, 0); }, error)) {
    return false;
  }
  *rows = int64_t(std::clamp<__int128>(__int128(last) - first + 1, 0, int64_t(1) << 50));
  return true;
}

void work(const std::string& path, const DumpQuery& query, int64_t ts_factor,
          const SqliteReadOptions& options, Shared* shared) {
  DbHandle handle;
  std::string open_error;
  const bool opened = open_for_reading(path, &handle, &open_error);
  for (;;) {
    const size_t k = shared->next.fetch_add(1);
    if (k >= shared->slices.size()) return;
    Slice& slice = shared->slices[k];
    {
      std::lock_guard lock(shared->mutex);
      if (shared->stop) return;
    }
    StringTable strings;
    size_t strings_sent = 1;  // id 0 is "" in every table
    std::vector<MemEvent> events;
    auto hand_over = [&]() {
      SliceBatch batch;
      batch.events = std::move(events);
      events = {};
      for (; strings_sent < strings.size(); ++strings_sent)
        batch.new_strings.push_back(strings.get(uint32_t(strings_sent)));
      std::unique_lock lock(shared->mutex);
      if (!shared->spare.empty()) {
        events = std::move(shared->spare.back());
        shared->spare.pop_back();
      }
      shared->changed.wait(lock, [&] {
        return shared->stop || shared->current == k || slice.batches.size() < kBatchesAhead;
      });
      if (shared->stop) return false;
      slice.batches.push_back(std::move(batch));
      shared->changed.notify_all();
      return true;
    };
    bool ok = opened;
    std::string error = open_error;
    RowProblems problems;
    if (opened) {
      DumpScan scan;
      scan.time_order = true;
      scan.ts_factor = ts_factor;
      scan.batch_events = std::max<size_t>(options.batch_events, 1);
      scan.drain = hand_over;
      scan.filter = options.filter;
      scan.ts_null_only = slice.null_only;
      scan.ts_at_least = slice.at_least;
      scan.ts_below = slice.below;
      if (options.progress != nullptr) scan.rows_read = &options.progress->rows_read;
      ok = scan_dump_rows(path, handle.db, query, scan, &events, &strings, &problems, &error);
      if (ok && !events.empty()) hand_over();
    }
    std::lock_guard lock(shared->mutex);
    slice.done = true;
    slice.ok = ok;
    slice.error = error;
    slice.problems = problems;
    shared->changed.notify_all();
  }
}

}  // namespace

bool read_time_slices(const std::string& path, sqlite3* db, const DumpQuery& query,
                      int64_t ts_factor, const SqliteReadOptions& options, Recording* out,
                      RowProblems* problems, bool* used, std::string* error) {
  *used = false;
  const unsigned cores = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxWorkers);
  const unsigned max_workers = options.max_threads > 0 ? options.max_threads : cores;
  if (!query.timestamp_integer || max_workers < 2 || !options.drain ||
      !has_timestamp_index(db, query)) {
    return true;
  }
  int64_t rows = 0, lo = 0, hi = 0;
  bool any_low = false, any_high = false;
  if (!rows_hint(path, db, query, &rows, error) ||
      !numeric_edge(path, db, query, "", &any_low, &lo, error) ||
      !numeric_edge(path, db, query, "DESC", &any_high, &hi, error)) {
    return false;
  }
  const int64_t count =
      std::min(rows / std::max<int64_t>(options.min_rows_per_slice, 1), kMaxSlices);
  if (!any_low || !any_high || count < 2 || hi <= lo) return true;

  // The slices: NULL timestamps, then `count` spans of time (the first from below every
  // number, the last up to and past the last number: text sorts there). The first span is
  // an eighth of the others and handed on as soon as it is read: the window's first curves
  // wait for it, and a full slice read beside the other workers took them past 1.5 s.
  Shared shared;
  shared.slices.resize(size_t(count) + 1);
  shared.slices[0].null_only = true;
  const __int128 span = __int128(hi) - lo + 1;
  const __int128 first_span = std::max<__int128>(span / (count * 8), 1);
  auto edge = [&](int64_t k) {  // where span k begins, k in [1, count)
    return int64_t(lo + first_span + (span - first_span) * (k - 1) / (count - 1));
  };
  for (int64_t k = 0; k < count; ++k) {
    Slice& slice = shared.slices[size_t(k) + 1];
    if (k > 0) slice.at_least = edge(k);
    if (k + 1 < count) slice.below = edge(k + 1);
  }

  const unsigned workers_wanted = unsigned(std::min<int64_t>(max_workers, count));
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < workers_wanted; ++w) {
    try {
      workers.emplace_back([&] { work(path, query, ts_factor, options, &shared); });
    } catch (const std::system_error&) {
      break;  // the ones started take every slice
    }
  }
  if (workers.empty()) return true;
  *used = true;

  auto finish = [&] {
    {
      std::lock_guard lock(shared.mutex);
      shared.stop = true;
    }
    shared.changed.notify_all();
    for (std::thread& worker : workers) worker.join();
  };
  StringInterner interner(&out->strings);
  const size_t batch_events = std::max<size_t>(options.batch_events, 1);
  for (size_t k = 0; k < shared.slices.size(); ++k) {
    Slice& slice = shared.slices[k];
    std::vector<uint32_t> ids{0};  // the slice's string id -> the recording's
    for (;;) {
      std::unique_lock lock(shared.mutex);
      shared.changed.wait(lock, [&] { return !slice.batches.empty() || slice.done; });
      if (slice.batches.empty()) break;  // done
      SliceBatch batch = std::move(slice.batches.front());
      slice.batches.pop_front();
      shared.changed.notify_all();
      lock.unlock();
      for (const std::string& text : batch.new_strings) ids.push_back(interner.intern(text));
      rewrite_string_ids(&batch.events, ids);
      out->events.insert(out->events.end(), batch.events.begin(), batch.events.end());
      batch.events.clear();
      {
        std::lock_guard spare_lock(shared.mutex);
        if (shared.spare.size() < workers.size() + 1)
          shared.spare.push_back(std::move(batch.events));
      }
      if (out->events.size() >= batch_events && !options.drain()) {
        finish();
        return true;  // the caller stopped the read
      }
    }
    if (!slice.ok) {
      *error = slice.error;
      finish();
      return false;
    }
    add_problems(slice.problems, problems);
    if (k == 1 && !out->events.empty() && !options.drain()) {  // the first span: at once
      finish();
      return true;
    }
    std::lock_guard lock(shared.mutex);
    shared.current = k + 1;
    shared.changed.notify_all();
  }
  finish();
  return true;
}

}  // namespace memtap::reader
