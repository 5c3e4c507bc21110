// See flame_reader.h.
#include "monitor/viewdata/flame_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "monitor/engine/saturating.h"
#include "monitor/store/reader/sqlite_access.h"

namespace memtap::viewdata {

namespace {

using reader::Statement;

// The reader's own index, in the connection's temporary database (see flame_reader.h).
constexpr const char* kIndexSql =
    "CREATE TEMP TABLE flame_slice (pid INTEGER, tid INTEGER, level INTEGER, s INTEGER, "
    "e INTEGER, func INTEGER, line INTEGER);"
    "CREATE INDEX temp.flame_slice_by_level ON flame_slice (pid, level, s);"
    "CREATE TEMP TABLE flame_sample (pid INTEGER, tid INTEGER, ts INTEGER, stack INTEGER);"
    "CREATE INDEX temp.flame_sample_by_time ON flame_sample (pid, ts);";

// floor(log2(duration)): the slice's level (0 for 0 and 1 ns).
int level_of(int64_t duration_ns) {
  return duration_ns <= 1 ? 0 : 63 - std::countl_zero(uint64_t(duration_ns));
}
constexpr int kMaxLevel = 61;  // 2^62 ns (146 years): t0 - 2^(level + 1) stays in range
// Longer slices are not slices (flame_reader.h): their level would be past kMaxLevel.
constexpr int64_t kMaxSliceNs = (int64_t{1} << (kMaxLevel + 1)) - 1;

// python_trace_<pid>'s pid; false for a name that is not that (GLOB's [0-9]* lets any tail
// through, and a pid past 2^32 - 1 would alias another process's).
bool trace_table_pid(const std::string& name, uint32_t* pid) {
  constexpr size_t kPrefix = 13;  // "python_trace_"
  if (name.size() <= kPrefix || name.size() > kPrefix + 10) return false;
  uint64_t n = 0;
  for (size_t i = kPrefix; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    n = n * 10 + uint64_t(name[i] - '0');
  }
  if (n > UINT32_MAX) return false;
  *pid = uint32_t(n);
  return true;
}

// A pixel of [t0, t1] at `width` pixels, at least 1 ns, whatever the range.
int64_t pixel_of(int64_t t0, int64_t t1, int width) {
  return std::max<int64_t>(1, saturating_sub(t1, t0) / std::max(1, width));
}

bool prepare(sqlite3* db, const std::string& sql, Statement* s) {
  return sqlite3_prepare_v2(db, sql.c_str(), -1, &s->stmt, nullptr) == SQLITE_OK;
}

int64_t single_int(sqlite3* db, const std::string& sql, int64_t fallback = 0) {
  Statement s;
  if (!prepare(db, sql, &s) || sqlite3_step(s.stmt) != SQLITE_ROW) return fallback;
  return sqlite3_column_int64(s.stmt, 0);
}

std::string column_text(sqlite3_stmt* stmt, int i) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
  return text ? std::string(text, size_t(sqlite3_column_bytes(stmt, i))) : std::string();
}

// Commits the temporary index's inserts of one read() in one transaction.
struct Transaction {
  sqlite3* db;
  explicit Transaction(sqlite3* d) : db(d) { sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr); }
  ~Transaction() { sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr); }
};

}  // namespace

FlameReader::FlameReader(std::string path, std::string event_table)
    : path_(std::move(path)), event_table_(std::move(event_table)) {}

FlameReader::~FlameReader() {
  sqlite3_close(db_);
}

bool FlameReader::open(std::string* error) {
  if (db_ != nullptr) return true;
  const int rc = reader::open_read_only(path_, SQLITE_OPEN_NOMUTEX, &db_);
  if (rc != SQLITE_OK) {
    *error = reader::sqlite_failure(path_, db_, rc);
    sqlite3_close(db_);
    db_ = nullptr;
    return false;
  }
  sqlite3_busy_timeout(db_, 2000);  // live: the writer's checkpoints
  char* message = nullptr;
  if (sqlite3_exec(db_, kIndexSql, nullptr, nullptr, &message) != SQLITE_OK) {
    *error = path_ + ": cannot make the flame chart's index (" +
             std::string(message ? message : "?") + ")";
    sqlite3_free(message);
    sqlite3_close(db_);
    db_ = nullptr;
    return false;
  }
  compact_ = single_int(db_,
                        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                        "name = 'memtap_event'") != 0;
  if (compact_) unit_ = reader::TimestampUnit(1);  // the compact tables hold nanoseconds
  return true;
}

uint32_t FlameReader::function_id(const FlameFunction& f) {
  const std::string key = f.file + '\n' + f.function;
  const auto [it, added] = function_ids_.emplace(key, uint32_t(functions_.size()));
  if (added) {
    FlameFunction stored = f;
    stored.line = 0;  // the line is each span's
    functions_.push_back(std::move(stored));
  }
  return it->second;
}

// A stack's text, innermost frame first, one "file(line): function" a line.
int64_t FlameReader::stack_id(const std::string& text) {
  const auto [it, added] = stack_ids_.emplace(text, int64_t(stacks_.size()));
  if (!added) return it->second;
  std::vector<std::pair<uint32_t, int>> frames;
  for_each_stack_line(text, [&](std::string_view line) {
    const FlameFunction f = parse_func_info(line);
    frames.push_back({function_id(f), f.line});
  });
  std::reverse(frames.begin(), frames.end());  // outermost first
  stacks_.push_back(std::move(frames));
  return it->second;
}

bool FlameReader::index_traces(size_t rows_per_read, std::string* error) {
  // New tables appear while a live recording is written (a process's first slice).
  Statement list;
  if (prepare(db_,
              "SELECT name FROM sqlite_master WHERE type = 'table' AND "
              "name GLOB 'python_trace_[0-9]*'",
              &list)) {
    while (sqlite3_step(list.stmt) == SQLITE_ROW) {
      const std::string name = column_text(list.stmt, 0);
      const bool known = std::any_of(traces_.begin(), traces_.end(),
                                     [&](const TraceTable& t) { return t.name == name; });
      TraceTable t;
      if (known || !trace_table_pid(name, &t.pid)) continue;
      t.name = name;
      traces_.push_back(t);
    }
  }
  Statement insert;
  if (!prepare(db_, "INSERT INTO temp.flame_slice VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &insert)) {
    *error = reader::sqlite_failure(path_, db_, sqlite3_errcode(db_));
    return false;
  }
  for (TraceTable& t : traces_) {
    const std::string table = reader::quote_identifier(t.name);
    t.max_rowid = single_int(db_, "SELECT max(rowid) FROM " + table, t.last_rowid);
    if (t.last_rowid >= t.max_rowid) continue;
    Statement rows;
    if (!prepare(db_,
                 "SELECT rowid, \"FuncInfo\", CAST(\"StartTime(ns)\" AS INTEGER), "
                 "CAST(\"EndTime(ns)\" AS INTEGER), \"Thread Id\" FROM " +
                     table + " WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
                 &rows)) {
      continue;  // not msMemScope's columns: not a trace table after all
    }
    sqlite3_bind_int64(rows.stmt, 1, t.last_rowid);
    sqlite3_bind_int64(rows.stmt, 2, int64_t(rows_per_read));
    int rc;
    while ((rc = sqlite3_step(rows.stmt)) == SQLITE_ROW) {
      t.last_rowid = sqlite3_column_int64(rows.stmt, 0);
      int64_t s = 0, e = 0;
      if (!unit_.to_ns(sqlite3_column_int64(rows.stmt, 2), &s) ||
          !unit_.to_ns(sqlite3_column_int64(rows.stmt, 3), &e) || s < 0) {
        continue;
      }
      e = std::max(s, e);  // both at least 0: the difference fits
      if (e - s > kMaxSliceNs) continue;
      const FlameFunction f = parse_func_info(column_text(rows.stmt, 1));
      sqlite3_bind_int64(insert.stmt, 1, t.pid);
      sqlite3_bind_int64(insert.stmt, 2, sqlite3_column_int64(rows.stmt, 4));
      sqlite3_bind_int64(insert.stmt, 3, level_of(e - s));
      sqlite3_bind_int64(insert.stmt, 4, s);
      sqlite3_bind_int64(insert.stmt, 5, e);
      sqlite3_bind_int64(insert.stmt, 6, function_id(f));
      sqlite3_bind_int64(insert.stmt, 7, f.line);
      sqlite3_step(insert.stmt);
      sqlite3_reset(insert.stmt);
    }
    if (rc != SQLITE_DONE) {
      *error = reader::sqlite_failure(path_, db_, rc);
      return false;
    }
  }
  return true;
}

bool FlameReader::index_stacks(size_t rows_per_read, std::string* error) {
  // The event table is scanned by ID (its INTEGER PRIMARY KEY) a window of rows_per_read
  // IDs at a time: most rows carry no stack, so a LIMIT on the matches would not bound the
  // work.
  std::string sql;
  int64_t base_ns = 0;
  if (compact_) {
    max_event_id_ = single_int(db_, "SELECT max(ID) FROM memtap_event");
    base_ns = single_int(db_, "SELECT timestamp_base_ns FROM memtap_format");
    sql =
        "SELECT e.ID, e.timestamp_offset_ns, t.process_id, t.thread_id, e.stack_python "
        "FROM memtap_event AS e LEFT JOIN memtap_thread AS t ON t.thread = e.thread "
        "WHERE e.ID > ?1 AND e.ID <= ?2 AND e.event = 0 AND e.stack_python <> 0";
  } else {
    if (event_table_.empty()) return true;
    const std::string table = reader::quote_identifier(event_table_);
    max_event_id_ = single_int(db_, "SELECT max(\"ID\") FROM " + table);
    sql =
        "SELECT \"ID\", \"Timestamp(ns)\", \"Process Id\", \"Thread Id\", "
        "\"Call Stack(Python)\" FROM " +
        table +
        " WHERE \"ID\" > ?1 AND \"ID\" <= ?2 AND \"Event\" = 'MALLOC' AND "
        "\"Call Stack(Python)\" <> ''";
  }
  if (last_event_id_ >= max_event_id_) return true;
  Statement rows, insert;
  if (!prepare(db_, sql, &rows)) {
    last_event_id_ = max_event_id_;  // no stack column: nothing to index
    return true;
  }
  if (!prepare(db_, "INSERT INTO temp.flame_sample VALUES (?1, ?2, ?3, ?4)", &insert)) {
    *error = reader::sqlite_failure(path_, db_, sqlite3_errcode(db_));
    return false;
  }
  const int64_t last = std::min(max_event_id_, last_event_id_ + int64_t(rows_per_read));
  sqlite3_bind_int64(rows.stmt, 1, last_event_id_);
  sqlite3_bind_int64(rows.stmt, 2, last);
  Statement text;
  if (compact_) prepare(db_, "SELECT text FROM memtap_string WHERE id = ?1", &text);
  int rc;
  while ((rc = sqlite3_step(rows.stmt)) == SQLITE_ROW) {
    int64_t stack = -1;
    if (compact_) {
      const int64_t string_id = sqlite3_column_int64(rows.stmt, 4);
      const auto found = compact_stack_ids_.find(string_id);
      if (found != compact_stack_ids_.end()) {
        stack = found->second;
      } else if (text.stmt != nullptr) {
        sqlite3_bind_int64(text.stmt, 1, string_id);
        if (sqlite3_step(text.stmt) == SQLITE_ROW) stack = stack_id(column_text(text.stmt, 0));
        sqlite3_reset(text.stmt);
        compact_stack_ids_[string_id] = stack;
      }
    } else {
      stack = stack_id(column_text(rows.stmt, 4));
    }
    if (stack < 0) continue;
    const int64_t raw = sqlite3_column_int64(rows.stmt, 1);
    int64_t ts = 0;
    if (compact_ ? __builtin_add_overflow(base_ns, raw, &ts) : !unit_.to_ns(raw, &ts)) continue;
    sqlite3_bind_int64(insert.stmt, 1, sqlite3_column_int64(rows.stmt, 2));
    sqlite3_bind_int64(insert.stmt, 2, sqlite3_column_int64(rows.stmt, 3));
    sqlite3_bind_int64(insert.stmt, 3, ts);
    sqlite3_bind_int64(insert.stmt, 4, stack);
    sqlite3_step(insert.stmt);
    sqlite3_reset(insert.stmt);
  }
  if (rc != SQLITE_DONE) {
    *error = reader::sqlite_failure(path_, db_, rc);
    return false;
  }
  last_event_id_ = last;
  return true;
}

bool FlameReader::index_more(size_t rows_per_read, double* fraction, std::string* error) {
  Transaction transaction(db_);
  if (!index_traces(rows_per_read, error) || !index_stacks(rows_per_read, error)) return false;
  double done = double(last_event_id_), all = double(max_event_id_);
  for (const TraceTable& t : traces_) {
    done += double(t.last_rowid);
    all += double(t.max_rowid);
  }
  *fraction = all > 0 ? std::min(1.0, done / all) : 1.0;
  return true;
}

void FlameReader::read_slices(const FlameRequest& request, FlameData* data, std::string* error) {
  const int64_t t0 = request.t0_ns, t1 = request.t1_ns;
  const int64_t pixel_ns = pixel_of(t0, t1, request.width_px);
  Statement max_level, rows;
  if (!prepare(db_, "SELECT max(level) FROM temp.flame_slice WHERE pid = ?1", &max_level) ||
      !prepare(db_,
               "SELECT tid, s, e, func, line FROM temp.flame_slice WHERE pid = ?1 AND "
               "level = ?2 AND s BETWEEN ?3 AND ?4 AND e >= ?5 AND e - s >= ?6 LIMIT ?7",
               &rows)) {
    *error = reader::sqlite_failure(path_, db_, sqlite3_errcode(db_));
    return;
  }
  sqlite3_bind_int64(max_level.stmt, 1, request.pid);
  if (sqlite3_step(max_level.stmt) != SQLITE_ROW ||
      sqlite3_column_type(max_level.stmt, 0) == SQLITE_NULL) {
    return;  // no slices for this process
  }
  data->has_trace = true;
  const int top = std::min(kMaxLevel, int(sqlite3_column_int64(max_level.stmt, 0)));
  // Below level_of(pixel) every slice is narrower than a pixel.
  for (int level = top; level >= level_of(pixel_ns); --level) {
    const size_t room = request.max_spans - data->spans.size();
    sqlite3_reset(rows.stmt);
    sqlite3_bind_int64(rows.stmt, 1, request.pid);
    sqlite3_bind_int64(rows.stmt, 2, level);
    sqlite3_bind_int64(rows.stmt, 3, saturating_sub(t0, int64_t{2} << level));
    sqlite3_bind_int64(rows.stmt, 4, t1);
    sqlite3_bind_int64(rows.stmt, 5, t0);
    sqlite3_bind_int64(rows.stmt, 6, pixel_ns);
    sqlite3_bind_int64(rows.stmt, 7, int64_t(room) + 1);
    while (sqlite3_step(rows.stmt) == SQLITE_ROW) {
      if (data->spans.size() == request.max_spans) {
        data->truncated = true;
        break;
      }
      FlameSpan span;
      span.thread_id = uint32_t(sqlite3_column_int64(rows.stmt, 0));
      span.start_ns = sqlite3_column_int64(rows.stmt, 1);
      span.end_ns = sqlite3_column_int64(rows.stmt, 2);
      span.function = uint32_t(sqlite3_column_int64(rows.stmt, 3));
      span.line = int(sqlite3_column_int64(rows.stmt, 4));
      data->spans.push_back(span);
    }
    if (data->truncated) break;
  }
  nest_trace_spans(data);
}

void FlameReader::read_samples(const FlameRequest& request, FlameData* data, std::string* error) {
  const int64_t t0 = request.t0_ns, t1 = request.t1_ns;
  data->has_stacks = single_int(db_, "SELECT EXISTS (SELECT 1 FROM temp.flame_sample WHERE pid = " +
                                         std::to_string(request.pid) + ")") != 0;
  if (!data->has_stacks) return;
  const int width = std::max(1, request.width_px);
  const int64_t pixel_ns = pixel_of(t0, t1, width);
  const size_t max_samples = size_t(width) * 2;
  Statement count;
  prepare(db_, "SELECT count(*) FROM temp.flame_sample WHERE pid = ?1 AND ts BETWEEN ?2 AND ?3",
          &count);
  sqlite3_bind_int64(count.stmt, 1, request.pid);
  sqlite3_bind_int64(count.stmt, 2, t0);
  sqlite3_bind_int64(count.stmt, 3, t1);
  const int64_t in_range =
      sqlite3_step(count.stmt) == SQLITE_ROW ? sqlite3_column_int64(count.stmt, 0) : 0;
  if (in_range == 0) return;
  // Every sample when they fit; else the first of each thread in each bucket of the range.
  const int64_t bucket_ns = saturating_sub(t1, t0) / int64_t(max_samples) + 1;
  const bool all = size_t(in_range) <= max_samples;
  Statement rows;
  const std::string sql =
      all ? "SELECT tid, ts, stack FROM temp.flame_sample WHERE pid = ?1 AND ts BETWEEN ?2 "
            "AND ?3 ORDER BY ts"
          : "SELECT tid, min(ts), stack FROM temp.flame_sample WHERE pid = ?1 AND ts BETWEEN "
            "?2 AND ?3 GROUP BY tid, (ts - ?2) / ?4 ORDER BY 2";
  if (!prepare(db_, sql, &rows)) {
    *error = reader::sqlite_failure(path_, db_, sqlite3_errcode(db_));
    return;
  }
  sqlite3_bind_int64(rows.stmt, 1, request.pid);
  sqlite3_bind_int64(rows.stmt, 2, t0);
  sqlite3_bind_int64(rows.stmt, 3, t1);
  if (!all) sqlite3_bind_int64(rows.stmt, 4, bucket_ns);
  std::vector<FlameSample> samples;
  while (sqlite3_step(rows.stmt) == SQLITE_ROW) {
    FlameSample s;
    s.thread_id = uint32_t(sqlite3_column_int64(rows.stmt, 0));
    s.ts_ns = sqlite3_column_int64(rows.stmt, 1);
    const int64_t stack = sqlite3_column_int64(rows.stmt, 2);
    if (stack < 0 || size_t(stack) >= stacks_.size()) continue;
    s.frames = stacks_[size_t(stack)];
    samples.push_back(std::move(s));
  }
  drop_traced_samples(*data, &samples);
  data->samples = size_t(std::count_if(samples.begin(), samples.end(),
                                       [](const FlameSample& s) { return !s.frames.empty(); }));
  merge_samples(samples, pixel_ns, data);
  bound_spans(data, request.max_spans);
}

FlameData FlameReader::read(const FlameRequest& request) {
  FlameData data;
  data.pid = request.pid;
  data.t0_ns = request.t0_ns;
  data.t1_ns = request.t1_ns;
  if (!open(&data.error)) return data;
  double fraction = 1;
  if (!index_more(std::max<size_t>(request.rows_per_read, 1), &fraction, &data.error)) return data;
  data.indexed = fraction >= 1;
  data.indexed_fraction = fraction;
  if (request.t1_ns <= request.t0_ns) return data;
  read_slices(request, &data, &data.error);
  read_samples(request, &data, &data.error);
  const bool traced = std::any_of(data.spans.begin(), data.spans.end(),
                                  [](const FlameSpan& s) { return s.samples == 0; });
  const bool sampled = std::any_of(data.spans.begin(), data.spans.end(),
                                   [](const FlameSpan& s) { return s.samples != 0; });
  data.source = traced && sampled ? FlameSource::kTraceAndStacks
                : traced          ? FlameSource::kTrace
                : sampled         ? FlameSource::kAllocationStacks
                                  : FlameSource::kNone;
  data.functions = functions_;
  return data;
}

}  // namespace memtap::viewdata
