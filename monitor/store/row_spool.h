// A first-in first-out queue of DumpRows in a file: where the writer's queue goes once it
// holds more rows than memory should (MemscopeWriterOptions::max_memory_rows), so a live
// rate above what SQLite takes costs disk, not the monitor's memory, and loses nothing.
//
// Each push() is one block: a 12-byte header (rows, bytes) and the rows packed against the
// row before them (only the fields that changed, as varint deltas): about 15 bytes a
// MALLOC/FREE row instead of DumpRow's 128, so that a flood costs the receiving thread, which
// writes the spool, an eighth of the copying and the disk an eighth of the pages. The file never
// outlives the process that wrote it. Not thread-safe: the writer calls it under its own
// lock, except read(), whose blocks claim() handed over and no push() ever touches again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "monitor/model/dump_row.h"

namespace memtap {

class RowSpool {
 public:
  // Creates `path` (replacing a stale one, mode 0600). nullptr with *error otherwise (and
  // errno saying why).
  static std::unique_ptr<RowSpool> create(const std::string& path, std::string* error);
  // Closes and removes the file.
  ~RowSpool();
  RowSpool(const RowSpool&) = delete;
  RowSpool& operator=(const RowSpool&) = delete;

  // Appends the rows. False (nothing appended) with *error when the disk refuses them;
  // last_error_number() then says why (ENOSPC: the disk is full).
  bool push(const DumpRow* rows, size_t count, std::string* error);
  int last_error_number() const { return last_errno_; }

  // The oldest unread blocks (whole pushes): the first, then more while their rows stay
  // within `max`. Their rows count as read from here on; read() then fetches them.
  struct Claim {
    uint64_t first = 0;   // index of its first row among all rows pushed since the last truncate
    size_t count = 0;     // rows
    uint64_t offset = 0;  // bytes into the file
    uint64_t bytes = 0;
  };
  Claim claim(size_t max);
  // Appends the claimed rows to *out. False with *error (naming the file and the byte) if
  // the file cannot be read back or does not hold what was written there.
  bool read(const Claim& claim, std::vector<DumpRow>* out, std::string* error) const;

  // Rows pushed and not yet claimed, and their bytes in the file.
  uint64_t unread() const { return written_ - claimed_; }
  uint64_t unread_bytes() const { return end_offset_ - claimed_offset_; }
  // Empties the file once everything was read, so its disk space comes back.
  void truncate_if_drained();

  const std::string& path() const { return path_; }

 private:
  RowSpool(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  struct Block {
    uint64_t bytes = 0;
    size_t rows = 0;
  };
  std::string path_;
  int fd_;
  uint64_t written_ = 0;         // rows in the file
  uint64_t claimed_ = 0;         // rows handed out by claim()
  uint64_t end_offset_ = 0;      // bytes in the file
  uint64_t claimed_offset_ = 0;  // bytes handed out by claim()
  int last_errno_ = 0;           // why the last push() failed
  std::deque<Block> unclaimed_;  // the blocks after claimed_offset_, in file order
  // push()'s buffer, kept for its capacity; not a vector, whose resize would zero it first.
  std::unique_ptr<char[]> packed_;
  size_t packed_capacity_ = 0;
};

}  // namespace memtap
