// The block index's queue on disk: where a live flood's events go once the index's queue in
// memory is full. The index must never hold the engine back, and it used to drop what did
// not fit, so that the block views missed a flood's blocks until the run ended and the index
// was built again from the finished recording (for a long training run: for hours). Spooled,
// the block views fall behind in a flood and catch up after it, with every block.
//
// Each append() is one batch, as add() made it: the texts new to the index and the events,
// laid out as a 16-byte header (a tag, the strings, the events, the bytes of the strings),
// then each string (id, length, text), then the events as they are in memory (64 bytes each;
// the spool holds a backlog, not the session, and is emptied whenever it is drained). One
// thread appends (the engine's) and one reads (the index's); either may call while the other
// does. The file is unlinked as soon as it is made, so it never outlives the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "monitor/viewdata/block_pairing.h"

namespace memtap::viewdata {

struct SpooledBatch {
  std::vector<std::pair<uint32_t, std::string>> strings;  // (id, text), as the index's items
  std::vector<IndexEvent> events;
};

class BlockSpool {
 public:
  // A spool in temp_dir() that holds at most `max_bytes` unread. nullptr with *error (one
  // line naming the file) when it cannot be made.
  static std::unique_ptr<BlockSpool> create(uint64_t max_bytes, std::string* error);
  ~BlockSpool();
  BlockSpool(const BlockSpool&) = delete;
  BlockSpool& operator=(const BlockSpool&) = delete;

  // Appends one batch. False (nothing appended) with *error when it would pass max_bytes or
  // the disk refuses it.
  bool append(const std::vector<std::pair<uint32_t, std::string>>& strings,
              const std::vector<IndexEvent>& events, std::string* error);

  enum class Read { kNone, kBatch, kFailed };
  // The oldest batch not yet read, into *out (replacing what it held). kFailed with *error
  // (naming the file and the byte) when the file does not hold what was written there: the
  // batch is given up (*lost_events: its events), and the next read() goes on with the next.
  Read read(SpooledBatch* out, uint64_t* lost_events, std::string* error);

  // Bytes appended and not yet read (any thread).
  uint64_t unread_bytes() const;
  const std::string& path() const { return path_; }

 private:
  BlockSpool(std::string path, int fd, uint64_t max_bytes)
      : path_(std::move(path)), fd_(fd), max_bytes_(max_bytes) {}

  const std::string path_;  // for messages: the file itself is already unlinked
  const int fd_;
  const uint64_t max_bytes_;
  mutable std::mutex mutex_;
  uint64_t end_ = 0;   // guarded by mutex_: bytes written
  uint64_t read_ = 0;  // guarded by mutex_: bytes read; the file is emptied when it reaches end_
  // Guarded by mutex_: each unread batch's end (bytes) and events, oldest first.
  std::deque<std::pair<uint64_t, uint32_t>> batches_;
  std::vector<char> buffer_;  // append()'s (the engine's thread)
  std::vector<char> input_;   // read()'s (the index's thread)
};

}  // namespace memtap::viewdata
