// The prepared INSERTs of a recording (see compact_inserter.h).
#include "monitor/store/compact_inserter.h"

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <utility>

#include "monitor/store/batch_insert.h"
#include "monitor/store/compact_schema.h"
#include "monitor/store/memscope_schema.h"
#include "monitor/store/sqlite_status.h"

namespace memtap {
namespace {

// Column indices of memtap_event (compact_schema.h), and of a row's EventValues; a row's
// parameter numbers in an INSERT are these plus one, after the rows before it.
enum Column : int {
  kId,
  kEvent,
  kEventType,
  kTimestampOffset,
  kThread,
  kPtr,
  kSizeBytes,
  kAllocationId,
  kName,
  kOwner,
  kStackPython,
  kStackC,
  kDetail,
};

int prepare_one(sqlite3* db, const char* sql, sqlite3_stmt** stmt) {
  return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr);
}

int step_and_reset(sqlite3_stmt* stmt) {
  const int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  return rc;
}

}  // namespace

std::unique_ptr<CompactInserter> CompactInserter::prepare(sqlite3* db, std::string* error) {
  std::unique_ptr<CompactInserter> inserter(new CompactInserter(db));
  const std::pair<sqlite3_stmt**, const char*> statements[] = {
      {&inserter->event_, kInsertEventSql},     {&inserter->thread_, kInsertThreadSql},
      {&inserter->string_, kInsertStringSql},   {&inserter->chunk_, kInsertEventChunkSql},
      {&inserter->base_, kSetTimestampBaseSql}, {&inserter->stream_, kInsertEventStreamSql},
      {&inserter->pool_, kInsertEventPoolSql},
  };
  static_assert(kDetail + 1 == kColumns, "EventValues holds every column of memtap_event");
  for (const auto& [stmt, sql] : statements) {
    const int rc = prepare_one(db, sql, stmt);
    if (rc != SQLITE_OK) {
      if (error != nullptr)
        *error = "preparing `" + std::string(sql) + "`: " + sqlite_error_text(db, rc);
      return nullptr;
    }
  }
  const int rc = prepare_one(db, batch_insert_sql("memtap_event", kBatchRows, kColumns).c_str(),
                             &inserter->event_batch_);
  if (rc != SQLITE_OK) {
    if (error != nullptr)
      *error = "preparing the INSERT of " + std::to_string(kBatchRows) +
               " memtap_event rows: " + sqlite_error_text(db, rc);
    return nullptr;
  }
  return inserter;
}

CompactInserter::~CompactInserter() {
  for (sqlite3_stmt* stmt : {event_, event_batch_, thread_, string_, chunk_, base_, stream_, pool_})
    sqlite3_finalize(stmt);
}

int CompactInserter::define_string(uint32_t id, std::string_view text) {
  while (strings_.size() <= id) strings_.emplace_back();
  strings_[id].assign(text);
  if (id == 0) return SQLITE_DONE;  // 0 is "none" in every column
  sqlite3_bind_int64(string_, 1, id);
  sqlite3_bind_text(string_, 2, strings_[id].data(), static_cast<int>(strings_[id].size()),
                    SQLITE_STATIC);
  return step_and_reset(string_);
}

const std::string& CompactInserter::text(uint32_t id) const {
  return id < strings_.size() ? strings_[id] : strings_[0];
}

int64_t CompactInserter::thread_number(uint32_t pid, uint32_t tid, int* rc) {
  const uint64_t key = (uint64_t{pid} << 32) | tid;
  // Any key is possible, the initial ~0 too (pid and tid 4294967295, from a hostile agent).
  if (last_thread_ >= 0 && key == last_thread_key_) return last_thread_;
  auto [it, added] = threads_.try_emplace(key, static_cast<int64_t>(threads_.size()));
  if (added) {
    sqlite3_bind_int64(thread_, 1, it->second);
    sqlite3_bind_int64(thread_, 2, pid);
    sqlite3_bind_int64(thread_, 3, tid);
    *rc = step_and_reset(thread_);
    if (*rc != SQLITE_DONE) {
      threads_.erase(it);
      return -1;
    }
  }
  last_thread_key_ = key;
  last_thread_ = it->second;
  return it->second;
}

int CompactInserter::insert(int64_t id, const DumpRow& row) {
  int rc = SQLITE_DONE;
  const int64_t thread = thread_number(row.process_id, row.thread_id, &rc);
  if (thread < 0) return rc;
  if (!have_base_) {
    // Times are stored from the first row's, so a run of up to 39 hours needs 6 bytes a
    // row where epoch nanoseconds take 8.
    sqlite3_bind_int64(base_, 1, row.timestamp_ns);
    rc = step_and_reset(base_);
    if (rc != SQLITE_DONE) return rc;
    timestamp_base_ns_ = row.timestamp_ns;
    have_base_ = true;
  }
  const int64_t offset = row.timestamp_ns - timestamp_base_ns_;
  // Unused columns are bound as 0, which SQLite stores in no data byte at all.
  const CompactColumns c = pack_columns(row);
  if (c.has_stream_row) {
    sqlite3_bind_int64(stream_, 1, id);
    sqlite3_bind_int64(stream_, 2, c.stream);
    rc = step_and_reset(stream_);
    if (rc != SQLITE_DONE) return rc;
  }
  if (c.has_pool_row) {
    sqlite3_bind_int64(pool_, 1, id);
    // -1: not known, NULL (no `used`/`total` in the view's Attr).
    if (c.pool_used >= 0) {
      sqlite3_bind_int64(pool_, 2, c.pool_used);
    } else {
      sqlite3_bind_null(pool_, 2);
    }
    if (c.pool_total >= 0) {
      sqlite3_bind_int64(pool_, 3, c.pool_total);
    } else {
      sqlite3_bind_null(pool_, 3);
    }
    sqlite3_bind_int64(pool_, 4, c.free_pending ? 1 : 0);
    rc = step_and_reset(pool_);
    if (rc != SQLITE_DONE) return rc;
  }
  EventValues& v = pending_[pending_count_++];
  v[kId] = id;
  v[kEvent] = static_cast<int>(row.event);
  v[kEventType] = static_cast<int>(row.event_type);
  v[kTimestampOffset] = offset;
  v[kThread] = thread;
  v[kPtr] = c.ptr;
  v[kSizeBytes] = c.size_bytes;
  v[kAllocationId] = c.allocation_id;
  v[kName] = row.name;
  v[kOwner] = c.owner;
  v[kStackPython] = row.stack_python;
  v[kStackC] = row.stack_c;
  v[kDetail] = c.detail;
  if (pending_count_ == kBatchRows) {
    rc = write_pending();
    if (rc != SQLITE_DONE) return rc;
  }
  if (chunk_first_id_ >= 0 && id - chunk_first_id_ >= kEventChunkRows) {
    rc = write_chunk();
    if (rc != SQLITE_DONE) return rc;
    chunk_first_id_ = -1;
  }
  if (chunk_first_id_ < 0) {
    chunk_first_id_ = id - id % kEventChunkRows;
    chunk_min_offset_ = offset;
  } else if (offset < chunk_min_offset_) {
    chunk_min_offset_ = offset;
  }
  return SQLITE_DONE;
}

int CompactInserter::write_pending() {
  const int count = pending_count_;
  // Unwritten after an error too: the writer rolls the transaction back and stops.
  pending_count_ = 0;
  if (count == kBatchRows) return write_rows(event_batch_, 0, count);
  for (int r = 0; r < count; ++r) {
    const int rc = write_rows(event_, r, 1);
    if (rc != SQLITE_DONE) return rc;
  }
  return SQLITE_DONE;
}

int CompactInserter::write_rows(sqlite3_stmt* stmt, int first, int count) {
  int param = 1;
  for (int i = first; i < first + count; ++i) {
    const EventValues& v = pending_[i];
    ids_.bind(stmt, param + kId, v[kId]);
    for (int c = kId + 1; c < kColumns; ++c) sqlite3_bind_int64(stmt, param + c, v[c]);
    param += kColumns;
  }
  return ids_.step(db_, stmt);
}

int CompactInserter::flush() {
  const int rc = write_pending();
  return rc != SQLITE_DONE ? rc : write_chunk();
}

int CompactInserter::write_chunk() {
  if (chunk_first_id_ < 0) return SQLITE_DONE;
  sqlite3_bind_int64(chunk_, 1, chunk_first_id_);
  sqlite3_bind_int64(chunk_, 2, chunk_min_offset_);
  return step_and_reset(chunk_);
}

}  // namespace memtap
