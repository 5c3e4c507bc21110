// A first-in first-out queue of DumpRows in a file: where the writer's queue goes once it
// holds more rows than memory should (MemscopeWriterOptions::max_memory_rows), so a live
// rate above what SQLite takes costs disk, not the monitor's memory, and loses nothing.
//
// Rows are written raw (DumpRow is plain data, and the file never outlives the process
// that wrote it): appending is one pwrite, reading back one pread. Not thread-safe: the
// writer calls it under its own lock, except read(), whose range claim() handed over and
// no push() ever touches again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "monitor/engine/dump_row.h"

namespace memtap {

class RowSpool {
 public:
  // Creates `path` (replacing a stale one, mode 0600). nullptr with *error otherwise.
  static std::unique_ptr<RowSpool> create(const std::string& path, std::string* error);
  // Closes and removes the file.
  ~RowSpool();
  RowSpool(const RowSpool&) = delete;
  RowSpool& operator=(const RowSpool&) = delete;

  // Appends the rows. False (nothing appended) with *error when the disk refuses them.
  bool push(const DumpRow* rows, size_t count, std::string* error);

  // The oldest unread rows, at most `max`: their range, which read() then fetches. The
  // rows count as read from here on.
  struct Claim {
    uint64_t first = 0;  // row index in the file
    size_t count = 0;
  };
  Claim claim(size_t max);
  // Appends the claimed rows to *out. False with *error if the file cannot be read back.
  bool read(const Claim& claim, std::vector<DumpRow>* out, std::string* error) const;

  // Rows pushed and not yet claimed.
  uint64_t unread() const { return written_ - claimed_; }
  // Empties the file once everything was read, so its disk space comes back.
  void truncate_if_drained();

  const std::string& path() const { return path_; }

 private:
  RowSpool(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
  uint64_t written_ = 0;  // rows in the file
  uint64_t claimed_ = 0;  // rows handed out by claim()
};

}  // namespace memtap
