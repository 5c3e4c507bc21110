// The block index's SQLite file: a temporary database only its thread uses, made for
// writing fast (journal off, no syncs, exclusive lock, a large cache, 16 KiB pages) and
// removed with the index.
//
// Tables:
//   blocks      the blocks that lived at most promote_after_ns (level 0), keyed by id
//               (rowid). Each row is written once, when the block is freed; rows come in
//               id order (block_pairing.h), so inserts append.
//   long_lived  the others, keyed by (level << 56 | id) (long_key): a block live past
//               promote_after_ns gets its row early, at kLiveLevel with free_ns kStillLive,
//               and it moves to its level when the block is freed. A live-at-t scan reads
//               each level over the ids allocated within that level's longest lifetime
//               before t: one rowid range per level, read in sequence.
//   strings     id -> text: the StringTable's texts the blocks refer to.
//   pending_frees  the PTA blocks' waits for another stream that are over (PendingFree),
//               by (pid, device, done_ns): the waits at t are those done after t and begun
//               (free_ns) at or before it, and none is longer than the longest seen.
//   temp.young  the young live blocks (in memory until promoted), copied in for a query.
// Rows are buffered and written in multi-row INSERTs, in transactions of many rows.
//
// A failed write (disk full, the file removed) makes the store fail for good: error() says
// so in one line naming the file, and nothing is written or read after.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "monitor/store/reader/sqlite_access.h"
#include "monitor/viewdata/block_pairing.h"

namespace memtap::viewdata {

// A long_lived row's key: the level in the top byte (kLiveLevel as 64, so keys stay
// positive), the id below.
inline int64_t long_key(uint8_t level, int64_t id) {
  return int64_t(uint64_t(level == kLiveLevel ? 64 : level) << 56) | id;
}

class BlockStore final : public BlockSink {
 public:
  // `path` "" for a fresh file in $TMPDIR (else /tmp). `max_file_bytes` 0 for no limit;
  // past it writes fail as on a full disk. nullptr with *error (one line) on failure.
  static std::unique_ptr<BlockStore> create(const std::string& path, uint64_t max_file_bytes,
                                            std::string* error);
  ~BlockStore() override;  // closes and removes the file

  void store(const StoredBlock& block, uint8_t level) override;
  void close_stored(int64_t id, int64_t free_ns, uint8_t level) override;
  void store_pending(const PendingFree& wait) override;
  void add_string(uint32_t id, const std::string& text);

  // Writes what is buffered (a query must see it).
  void flush();
  // Ends the transaction (no more input for a while).
  void commit();
  // The young live blocks for the queries: temp.young holds exactly these afterwards.
  void set_young(const std::vector<StoredBlock>& blocks);

  // The block with that id, wherever it is; false if none (or failed).
  bool fetch(int64_t id, StoredBlock* out);
  // The waits of (pid, device) over after t_ns that began at or before it; at most `limit`.
  std::vector<PendingFree> pending_at(uint32_t pid, int32_t device, int64_t t_ns, size_t limit);
  // The text of a string id ("" for 0, unknown ids and failures).
  std::string text(uint32_t id);
  // The string ids given to add_string, in that order.
  const std::vector<uint32_t>& string_ids() const { return string_ids_; }

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  // Records a failure of a query's statement (rc from a call on db()).
  void fail(int rc);
  sqlite3* db() const { return db_.db; }
  const std::string& path() const { return path_; }

  // Levels 1..63 that long_lived may hold (bit k for level k), and whether it holds live ones.
  uint64_t levels() const { return levels_; }
  bool has_live_stored() const { return live_stored_ != 0; }

 private:
  struct Pending {
    StoredBlock block;
    uint8_t level;
  };
  // A stored live block freed (applied at the next flush, in key order).
  struct Close {
    int64_t id;
    int64_t free_ns;
    uint8_t level;
  };

  explicit BlockStore(std::string path) : path_(std::move(path)) {}
  bool open(uint64_t max_file_bytes, std::string* error);
  bool prepare(const std::string& sql, reader::Statement* stmt);
  bool step(sqlite3_stmt* stmt);  // runs it once and resets it; false (and failed) on error
  bool begin();
  // Multi-row INSERTs of `rows`, keyed by id (blocks, temp.young: `last_id` is the table's
  // largest id) or by long_key (long_lived: `last_id` null).
  void write_rows(std::vector<Pending>& rows, sqlite3_stmt* many, sqlite3_stmt* one,
                  int64_t* last_id);
  bool fetch_from(sqlite3_stmt* stmt, int64_t key, StoredBlock* out);

  std::string path_;
  reader::DbHandle db_;
  std::string error_;
  bool in_transaction_ = false;
  size_t rows_in_transaction_ = 0;
  std::vector<Pending> pending_;       // for blocks
  std::vector<Pending> pending_long_;  // for long_lived
  bool pending_long_sorted_ = true;    // in id order (as they mostly come)
  std::vector<Close> closes_;
  std::vector<PendingFree> waits_;  // pending frees over, not written yet
  int64_t longest_wait_ns_ = 0;
  std::vector<std::pair<uint32_t, std::string>> pending_strings_;
  std::vector<uint32_t> string_ids_;
  int64_t last_id_ = 0;  // the largest id in blocks
  uint64_t levels_ = 0;
  uint64_t live_stored_ = 0;

  reader::Statement insert_many_, insert_one_;
  reader::Statement young_many_, young_one_, young_clear_;
  reader::Statement long_many_, long_one_, close_long_;
  reader::Statement insert_string_, insert_wait_, select_waits_;
  reader::Statement select_block_, select_young_, select_long_, select_text_;
  reader::Statement begin_, commit_;
};

// A StoredBlock's columns, each prefixed with `alias` ("b." or ""), for a SELECT that
// read_block reads from `first_column` on.
std::string block_columns(const std::string& alias);
StoredBlock read_block(sqlite3_stmt* stmt, int first_column = 0);

}  // namespace memtap::viewdata
