// See block_store.h.
#include "monitor/viewdata/block_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "monitor/store/sqlite_status.h"

namespace memtap::viewdata {

namespace {

constexpr int kColumns = 15;           // of a blocks row, level included
constexpr size_t kRowsPerInsert = 64;  // rows per multi-row INSERT: 960 parameters
constexpr size_t kLongPerInsert = 256;
constexpr size_t kFlushRows = 4096;        // buffered before they are written
constexpr size_t kRowsPerCommit = 262144;  // rows per transaction

const char* const kColumnNames[kColumns] = {
    "id",   "level", "pid",           "device", "slot", "alloc_ns",     "free_ns", "size",
    "addr", "tid",   "allocation_id", "owner",  "name", "stack_python", "stack_c"};

std::string table_sql(const char* table) {
  std::string sql = std::string("CREATE TABLE ") + table + "(id INTEGER PRIMARY KEY";
  for (int i = 1; i < kColumns; ++i) sql += std::string(", ") + kColumnNames[i] + " INTEGER";
  return sql + ")";
}

std::string insert_sql(const char* table, size_t rows) {
  std::string sql = std::string("INSERT INTO ") + table + " VALUES ";
  std::string row = "(?";
  for (int i = 1; i < kColumns; ++i) row += ",?";
  row += ")";
  for (size_t r = 0; r < rows; ++r) sql += (r ? "," : "") + row;
  return sql;
}

std::string long_insert_sql(size_t rows) {
  std::string sql = "INSERT OR REPLACE INTO long_lived VALUES ";
  for (size_t r = 0; r < rows; ++r) sql += r ? ",(?,?)" : "(?,?)";
  return sql;
}

void bind_row(sqlite3_stmt* stmt, int first, const StoredBlock& b, uint8_t level) {
  const int64_t values[kColumns] = {b.id,
                                    level,
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

std::string temp_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

}  // namespace

std::string block_columns(const std::string& alias) {
  std::string sql;
  for (int i = 0; i < kColumns; ++i) {
    if (i == 1) continue;  // level: the store's, not the block's
    if (!sql.empty()) sql += ", ";
    sql += alias + kColumnNames[i];
  }
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
  sql += table_sql("blocks") + ";" +
         "CREATE TABLE long_lived(level INTEGER, id INTEGER, PRIMARY KEY(level, id)) WITHOUT ROWID;"
         "CREATE TABLE strings(id INTEGER PRIMARY KEY, text TEXT);" +
         table_sql("temp.young") + ";";
  std::string sql_error;
  if (rc != SQLITE_OK) {
    sql_error = sqlite_error_text(db_.db, rc);
  } else if (!sqlite_exec(db_.db, sql.c_str(), &sql_error)) {
    // sqlite_exec names the SQL; the file and SQLite's reason are what a reader needs.
    sql_error = sqlite3_errmsg(db_.db);
  }
  if (sql_error.empty()) {
    const bool ok =
        prepare(insert_sql("blocks", kRowsPerInsert), &insert_many_) &&
        prepare(insert_sql("blocks", 1), &insert_one_) &&
        prepare(insert_sql("temp.young", kRowsPerInsert), &young_many_) &&
        prepare(insert_sql("temp.young", 1), &young_one_) &&
        prepare("DELETE FROM temp.young", &young_clear_) &&
        prepare(long_insert_sql(kLongPerInsert), &long_many_) &&
        prepare(long_insert_sql(1), &long_one_) &&
        prepare("UPDATE blocks SET level = ?1, free_ns = ?2 WHERE id = ?3", &close_block_) &&
        prepare("UPDATE long_lived SET level = ?1 WHERE level = 255 AND id = ?2", &close_long_) &&
        prepare("INSERT OR IGNORE INTO strings VALUES (?, ?)", &insert_string_) &&
        prepare("SELECT " + block_columns("") + " FROM blocks WHERE id = ?", &select_block_) &&
        prepare("SELECT " + block_columns("") + " FROM temp.young WHERE id = ?", &select_young_) &&
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
  if (!pending_.empty() && block.id < pending_.back().block.id) pending_sorted_ = false;
  pending_.push_back({block, level});
  if (level == kLiveLevel) ++live_stored_;
  if (pending_.size() >= kFlushRows) flush();
}

void BlockStore::close_stored(int64_t id, int64_t free_ns, uint8_t level) {
  if (failed()) return;
  --live_stored_;
  // Promoted and freed before its row was written: the row is written closed.
  auto same_id = [id](const Pending& p) { return p.block.id == id; };
  auto it = pending_sorted_
                ? std::lower_bound(pending_.begin(), pending_.end(), id,
                                   [](const Pending& p, int64_t v) { return p.block.id < v; })
                : std::find_if(pending_.begin(), pending_.end(), same_id);
  if (it != pending_.end() && it->block.id == id) {
    it->block.free_ns = free_ns;
    it->level = level;
    return;
  }
  if (!begin()) return;
  sqlite3_bind_int64(close_block_.stmt, 1, level);
  sqlite3_bind_int64(close_block_.stmt, 2, free_ns);
  sqlite3_bind_int64(close_block_.stmt, 3, id);
  sqlite3_bind_int64(close_long_.stmt, 1, level);
  sqlite3_bind_int64(close_long_.stmt, 2, id);
  if (step(close_block_.stmt) && step(close_long_.stmt)) levels_ |= uint64_t{1} << level;
}

void BlockStore::add_string(uint32_t id, const std::string& text) {
  if (failed()) return;
  pending_strings_.emplace_back(id, text);
  string_ids_.push_back(id);
}

void BlockStore::write_rows(const Pending* rows, size_t count, sqlite3_stmt* many,
                            sqlite3_stmt* one) {
  size_t i = 0;
  for (; i + kRowsPerInsert <= count && !failed(); i += kRowsPerInsert) {
    for (size_t r = 0; r < kRowsPerInsert; ++r)
      bind_row(many, int(r) * kColumns + 1, rows[i + r].block, rows[i + r].level);
    step(many);
  }
  for (; i < count && !failed(); ++i) {
    bind_row(one, 1, rows[i].block, rows[i].level);
    step(one);
  }
}

void BlockStore::write_long_lived() {
  size_t i = 0;
  const size_t n = pending_long_.size();
  for (; i + kLongPerInsert <= n && !failed(); i += kLongPerInsert) {
    for (size_t r = 0; r < kLongPerInsert; ++r) {
      sqlite3_bind_int64(long_many_.stmt, int(2 * r + 1), pending_long_[i + r].first);
      sqlite3_bind_int64(long_many_.stmt, int(2 * r + 2), pending_long_[i + r].second);
    }
    step(long_many_.stmt);
  }
  for (; i < n && !failed(); ++i) {
    sqlite3_bind_int64(long_one_.stmt, 1, pending_long_[i].first);
    sqlite3_bind_int64(long_one_.stmt, 2, pending_long_[i].second);
    step(long_one_.stmt);
  }
  pending_long_.clear();
}

void BlockStore::flush() {
  if (failed() || (pending_.empty() && pending_strings_.empty())) return;
  if (!begin()) return;
  for (const auto& [id, text] : pending_strings_) {
    if (failed()) break;
    sqlite3_bind_int64(insert_string_.stmt, 1, id);
    sqlite3_bind_text(insert_string_.stmt, 2, text.data(), int(text.size()), SQLITE_STATIC);
    step(insert_string_.stmt);
  }
  pending_strings_.clear();
  if (!pending_sorted_) {
    std::sort(pending_.begin(), pending_.end(),
              [](const Pending& a, const Pending& b) { return a.block.id < b.block.id; });
  }
  write_rows(pending_.data(), pending_.size(), insert_many_.stmt, insert_one_.stmt);
  for (const Pending& p : pending_) {
    if (p.level == 0) continue;
    pending_long_.emplace_back(p.level, p.block.id);
    if (p.level != kLiveLevel) levels_ |= uint64_t{1} << p.level;
  }
  write_long_lived();
  rows_in_transaction_ += pending_.size();
  pending_.clear();
  pending_sorted_ = true;
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
  write_rows(rows.data(), rows.size(), young_many_.stmt, young_one_.stmt);
}

bool BlockStore::fetch(int64_t id, StoredBlock* out) {
  if (failed()) return false;
  for (sqlite3_stmt* stmt : {select_block_.stmt, select_young_.stmt}) {
    sqlite3_bind_int64(stmt, 1, id);
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) *out = read_block(stmt);
    sqlite3_reset(stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) {
      fail(rc);
      return false;
    }
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
