// See block_store.h.
#include "monitor/viewdata/block_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "monitor/store/sqlite_status.h"
#include "monitor/viewdata/temp_dir.h"

namespace memtap::viewdata {

namespace {

constexpr int kColumns = 14;               // of a block's row
constexpr size_t kRowsPerInsert = 64;      // rows per multi-row INSERT: up to 1024 parameters
constexpr size_t kFlushRows = 4096;        // buffered before they are written
constexpr size_t kRowsPerCommit = 262144;  // rows per transaction

const char* const kColumnNames[kColumns] = {
    "id",   "pid", "device",        "slot",  "alloc_ns", "free_ns",      "size",
    "addr", "tid", "allocation_id", "owner", "name",     "stack_python", "stack_c"};

// long_lived has two more: its key, and the level the key holds (for reading).
std::string table_sql(const char* table, bool long_lived) {
  std::string sql = std::string("CREATE TABLE ") + table +
                    (long_lived ? "(key INTEGER PRIMARY KEY, level INTEGER, id INTEGER"
                                : "(id INTEGER PRIMARY KEY");
  for (int i = 1; i < kColumns; ++i) sql += std::string(", ") + kColumnNames[i] + " INTEGER";
  return sql + ")";
}

std::string insert_sql(const char* table, bool long_lived, size_t rows) {
  const int params = kColumns + (long_lived ? 2 : 0);
  std::string row = "(?";
  for (int i = 1; i < params; ++i) row += ",?";
  row += ")";
  std::string sql = std::string("INSERT INTO ") + table + " VALUES ";
  for (size_t r = 0; r < rows; ++r) sql += (r ? "," : "") + row;
  return sql;
}

void bind_row(sqlite3_stmt* stmt, int first, const StoredBlock& b) {
  const int64_t values[kColumns] = {b.id,
                                    b.pid,
                                    b.device,
                                    b.slot,
                                    b.alloc_ns,
                                    b.free_ns,
                                    int64_t(b.size_bytes),
                                    int64_t(b.addr),
                                    b.tid,
                                    int64_t(b.allocation_id),
                                    b.owner,
                                    b.name,
                                    b.stack_python,
                                    b.stack_c};
  for (int i = 0; i < kColumns; ++i) sqlite3_bind_int64(stmt, first + i, values[i]);
}

}  // namespace

std::string block_columns(const std::string& alias) {
  std::string sql;
  for (int i = 0; i < kColumns; ++i) sql += (i ? ", " : "") + alias + kColumnNames[i];
  return sql;
}

StoredBlock read_block(sqlite3_stmt* stmt, int c) {
  StoredBlock b;
  b.id = sqlite3_column_int64(stmt, c++);
  b.pid = uint32_t(sqlite3_column_int64(stmt, c++));
  b.device = int32_t(sqlite3_column_int64(stmt, c++));
  b.slot = uint8_t(sqlite3_column_int64(stmt, c++));
  b.alloc_ns = sqlite3_column_int64(stmt, c++);
  b.free_ns = sqlite3_column_int64(stmt, c++);
  b.size_bytes = uint64_t(sqlite3_column_int64(stmt, c++));
  b.addr = uint64_t(sqlite3_column_int64(stmt, c++));
  b.tid = uint32_t(sqlite3_column_int64(stmt, c++));
  b.allocation_id = uint64_t(sqlite3_column_int64(stmt, c++));
  b.owner = uint32_t(sqlite3_column_int64(stmt, c++));
  b.name = uint32_t(sqlite3_column_int64(stmt, c++));
  b.stack_python = uint32_t(sqlite3_column_int64(stmt, c++));
  b.stack_c = uint32_t(sqlite3_column_int64(stmt, c++));
  return b;
}

std::unique_ptr<BlockStore> BlockStore::create(const std::string& path, uint64_t max_file_bytes,
                                               std::string* error) {
  // The file is made here, never taken over: it is removed with the index.
  std::string file = path.empty() ? temp_dir() + "/memtap-blocks-XXXXXX.db" : path;
  const int fd = path.empty() ? ::mkstemps(file.data(), 3)
                              : ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot create the block index " + file + ": " + std::strerror(errno);
    return nullptr;
  }
  ::close(fd);
  std::unique_ptr<BlockStore> store(new BlockStore(file));
  if (!store->open(max_file_bytes, error)) return nullptr;  // the destructor removes the file
  return store;
}

BlockStore::~BlockStore() {
  // An open file can be unlinked; the statements and the handle close after.
  ::unlink(path_.c_str());
}

bool BlockStore::open(uint64_t max_file_bytes, std::string* error) {
  int rc =
      sqlite3_open_v2(path_.c_str(), &db_.db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::string sql =
      "PRAGMA page_size = 16384; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
      "PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = -131072; PRAGMA temp_store = MEMORY;";
  if (max_file_bytes != 0)
    sql +=
        "PRAGMA max_page_count = " + std::to_string(std::max<uint64_t>(max_file_bytes / 16384, 1)) +
        ";";
  sql += table_sql("blocks", false) + ";" + table_sql("long_lived", true) + ";" +
         "CREATE TABLE strings(id INTEGER PRIMARY KEY, text TEXT);" +
         "CREATE TABLE pending_frees(pid INTEGER, device INTEGER, done_ns INTEGER, id INTEGER, "
         "free_ns INTEGER);" +
         "CREATE INDEX pending_frees_done ON pending_frees(pid, device, done_ns);" +
         table_sql("temp.young", false) + ";";
  std::string sql_error;
  if (rc != SQLITE_OK) {
    sql_error = sqlite_error_text(db_.db, rc);
  } else if (!sqlite_exec(db_.db, sql.c_str(), &sql_error)) {
    // sqlite_exec names the SQL; the file and SQLite's reason are what a reader needs.
    sql_error = sqlite3_errmsg(db_.db);
  }
  if (sql_error.empty()) {
    const std::string columns = block_columns("");
    const bool ok =
        prepare(insert_sql("blocks", false, kRowsPerInsert), &insert_many_) &&
        prepare(insert_sql("blocks", false, 1), &insert_one_) &&
        prepare(insert_sql("temp.young", false, kRowsPerInsert), &young_many_) &&
        prepare(insert_sql("temp.young", false, 1), &young_one_) &&
        prepare("DELETE FROM temp.young", &young_clear_) &&
        prepare(insert_sql("long_lived", true, kRowsPerInsert), &long_many_) &&
        prepare(insert_sql("long_lived", true, 1), &long_one_) &&
        prepare("UPDATE long_lived SET key = ?1, level = ?2, free_ns = ?3 WHERE key = ?4",
                &close_long_) &&
        prepare("INSERT OR IGNORE INTO strings VALUES (?, ?)", &insert_string_) &&
        prepare("INSERT INTO pending_frees VALUES (?, ?, ?, ?, ?)", &insert_wait_) &&
        prepare(
            "SELECT id, free_ns, done_ns FROM pending_frees WHERE pid = ?1 AND device = ?2 "
            "AND done_ns > ?3 AND done_ns <= ?4 AND free_ns <= ?3 LIMIT ?5",
            &select_waits_) &&
        prepare("SELECT " + columns + " FROM blocks WHERE id = ?", &select_block_) &&
        prepare("SELECT " + columns + " FROM temp.young WHERE id = ?", &select_young_) &&
        prepare("SELECT " + columns + " FROM long_lived WHERE key = ?", &select_long_) &&
        prepare("SELECT text FROM strings WHERE id = ?", &select_text_) &&
        prepare("BEGIN", &begin_) && prepare("COMMIT", &commit_);
    if (!ok) sql_error = error_;
  }
  if (sql_error.empty()) return true;
  *error = "cannot create the block index " + path_ + ": " + sql_error;
  return false;
}

bool BlockStore::prepare(const std::string& sql, reader::Statement* stmt) {
  const int rc = sqlite3_prepare_v3(db_.db, sql.c_str(), int(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                    &stmt->stmt, nullptr);
  if (rc == SQLITE_OK) return true;
  fail(rc);
  return false;
}

void BlockStore::fail(int rc) {
  if (error_.empty()) error_ = "block index " + path_ + ": " + sqlite_error_text(db_.db, rc);
}

bool BlockStore::step(sqlite3_stmt* stmt) {
  const int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  if (rc == SQLITE_DONE || rc == SQLITE_ROW) return true;
  fail(rc);
  return false;
}

bool BlockStore::begin() {
  if (in_transaction_) return true;
  if (!step(begin_.stmt)) return false;
  in_transaction_ = true;
  return true;
}

void BlockStore::store(const StoredBlock& block, uint8_t level) {
  if (failed()) return;
  if (level == 0) {
    pending_.push_back({block, level});
  } else {
    if (!pending_long_.empty() && block.id < pending_long_.back().block.id)
      pending_long_sorted_ = false;
    pending_long_.push_back({block, level});
    if (level == kLiveLevel) ++live_stored_;
  }
  if (pending_.size() + pending_long_.size() >= kFlushRows) flush();
}

void BlockStore::close_stored(int64_t id, int64_t free_ns, uint8_t level) {
  if (failed()) return;
  --live_stored_;
  // Promoted and freed before its row was written: the row is written closed.
  auto it = pending_long_sorted_
                ? std::lower_bound(pending_long_.begin(), pending_long_.end(), id,
                                   [](const Pending& p, int64_t v) { return p.block.id < v; })
                : std::find_if(pending_long_.begin(), pending_long_.end(),
                               [id](const Pending& p) { return p.block.id == id; });
  if (it != pending_long_.end() && it->block.id == id) {
    it->block.free_ns = free_ns;
    it->level = level;
    return;
  }
  closes_.push_back({id, free_ns, level});
}

void BlockStore::store_pending(const PendingFree& wait) {
  if (failed()) return;
  waits_.push_back(wait);
  longest_wait_ns_ = std::max(longest_wait_ns_, wait.done_ns - wait.free_ns);
}

std::vector<PendingFree> BlockStore::pending_at(uint32_t pid, int32_t device, int64_t t_ns,
                                                size_t limit) {
  std::vector<PendingFree> out;
  flush();
  if (failed() || limit == 0) return out;
  sqlite3_stmt* s = select_waits_.stmt;
  const int64_t until = t_ns > INT64_MAX - longest_wait_ns_ ? INT64_MAX : t_ns + longest_wait_ns_;
  sqlite3_bind_int64(s, 1, pid);
  sqlite3_bind_int64(s, 2, device);
  sqlite3_bind_int64(s, 3, t_ns);
  sqlite3_bind_int64(s, 4, until);
  sqlite3_bind_int64(s, 5, int64_t(std::min<size_t>(limit, INT64_MAX)));
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    out.push_back({sqlite3_column_int64(s, 0), pid, device, sqlite3_column_int64(s, 1),
                   sqlite3_column_int64(s, 2)});
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) fail(rc);
  return out;
}

void BlockStore::add_string(uint32_t id, const std::string& text) {
  if (failed()) return;
  pending_strings_.emplace_back(id, text);
  string_ids_.push_back(id);
}

void BlockStore::write_rows(std::vector<Pending>& rows, sqlite3_stmt* many, sqlite3_stmt* one,
                            int64_t* last_id) {
  const bool long_lived = many == long_many_.stmt;
  const int params = kColumns + (long_lived ? 2 : 0);
  // Mostly in id order already; out of order after a query wrote the freed young blocks.
  if (!std::is_sorted(rows.begin(), rows.end(),
                      [](const Pending& a, const Pending& b) { return a.block.id < b.block.id; }))
    std::sort(rows.begin(), rows.end(),
              [](const Pending& a, const Pending& b) { return a.block.id < b.block.id; });
  const size_t count = rows.size();
  for (size_t i = 0; i < count && !failed();) {
    const size_t n = count - i >= kRowsPerInsert ? kRowsPerInsert : 1;
    sqlite3_stmt* stmt = n == 1 ? one : many;
    // Ids that follow the table's last one are left to SQLite, which then appends without
    // searching the table for them.
    const bool follows = last_id && rows[i].block.id == *last_id + 1 &&
                         rows[i + n - 1].block.id == rows[i].block.id + int64_t(n) - 1;
    for (size_t r = 0; r < n; ++r) {
      const Pending& p = rows[i + r];
      const int first = int(r) * params + 1;
      if (long_lived) {
        sqlite3_bind_int64(stmt, first, long_key(p.level, p.block.id));
        sqlite3_bind_int64(stmt, first + 1, p.level);
        if (p.level != kLiveLevel) levels_ |= uint64_t{1} << p.level;
      }
      bind_row(stmt, first + (long_lived ? 2 : 0), p.block);
      if (follows) sqlite3_bind_null(stmt, first);
    }
    if (!step(stmt)) return;
    if (last_id) {
      const int64_t last = rows[i + n - 1].block.id;
      if (follows && sqlite3_last_insert_rowid(db_.db) != last) {
        error_ = "block index " + path_ + ": a block's row did not get its id";
        return;
      }
      *last_id = std::max(*last_id, last);
    }
    i += n;
  }
  rows_in_transaction_ += count;
  rows.clear();
}

void BlockStore::flush() {
  if (failed() || (pending_.empty() && pending_long_.empty() && closes_.empty() &&
                   pending_strings_.empty() && waits_.empty()))
    return;
  if (!begin()) return;
  for (const auto& [id, text] : pending_strings_) {
    if (failed()) break;
    sqlite3_bind_int64(insert_string_.stmt, 1, id);
    sqlite3_bind_text(insert_string_.stmt, 2, text.data(), int(text.size()), SQLITE_STATIC);
    step(insert_string_.stmt);
  }
  pending_strings_.clear();
  write_rows(pending_, insert_many_.stmt, insert_one_.stmt, &last_id_);
  write_rows(pending_long_, long_many_.stmt, long_one_.stmt, nullptr);
  pending_long_sorted_ = true;
  // In the order of the keys they move to: each level's rows are inserted in sequence.
  std::sort(closes_.begin(), closes_.end(), [](const Close& a, const Close& b) {
    return long_key(a.level, a.id) < long_key(b.level, b.id);
  });
  for (const Close& c : closes_) {
    if (failed()) break;
    sqlite3_bind_int64(close_long_.stmt, 1, long_key(c.level, c.id));
    sqlite3_bind_int64(close_long_.stmt, 2, c.level);
    sqlite3_bind_int64(close_long_.stmt, 3, c.free_ns);
    sqlite3_bind_int64(close_long_.stmt, 4, long_key(kLiveLevel, c.id));
    if (step(close_long_.stmt)) levels_ |= uint64_t{1} << c.level;
  }
  rows_in_transaction_ += closes_.size();
  closes_.clear();
  for (const PendingFree& w : waits_) {
    if (failed()) break;
    const int64_t values[] = {w.pid, w.device, w.done_ns, w.id, w.free_ns};
    for (int i = 0; i < 5; ++i) sqlite3_bind_int64(insert_wait_.stmt, i + 1, values[i]);
    step(insert_wait_.stmt);
  }
  rows_in_transaction_ += waits_.size();
  waits_.clear();
  if (rows_in_transaction_ >= kRowsPerCommit) commit();
}

void BlockStore::commit() {
  flush();
  if (failed() || !in_transaction_) return;
  in_transaction_ = false;
  rows_in_transaction_ = 0;
  step(commit_.stmt);
}

void BlockStore::set_young(const std::vector<StoredBlock>& blocks) {
  if (failed() || !begin() || !step(young_clear_.stmt)) return;
  std::vector<Pending> rows;
  rows.reserve(blocks.size());
  for (const StoredBlock& b : blocks) rows.push_back({b, kLiveLevel});
  write_rows(rows, young_many_.stmt, young_one_.stmt, nullptr);
}

bool BlockStore::fetch_from(sqlite3_stmt* stmt, int64_t key, StoredBlock* out) {
  sqlite3_bind_int64(stmt, 1, key);
  const int rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW) *out = read_block(stmt);
  sqlite3_reset(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(rc);
  return rc == SQLITE_ROW;
}

bool BlockStore::fetch(int64_t id, StoredBlock* out) {
  if (failed() || id <= 0) return false;
  if (fetch_from(select_block_.stmt, id, out) || fetch_from(select_young_.stmt, id, out) ||
      fetch_from(select_long_.stmt, long_key(kLiveLevel, id), out))
    return true;
  for (int level = 1; level <= kMaxLevel && !failed(); ++level) {
    if ((levels_ >> level & 1) && fetch_from(select_long_.stmt, long_key(uint8_t(level), id), out))
      return true;
  }
  return false;
}

std::string BlockStore::text(uint32_t id) {
  if (id == 0 || failed()) return {};
  sqlite3_bind_int64(select_text_.stmt, 1, id);
  std::string text;
  const int rc = sqlite3_step(select_text_.stmt);
  if (rc == SQLITE_ROW) text = reader::column_string(select_text_.stmt, 0);
  sqlite3_reset(select_text_.stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(rc);
  return text;
}

}  // namespace memtap::viewdata
