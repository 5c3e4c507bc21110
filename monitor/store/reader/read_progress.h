// How far a read of a recording has got, for a progress display polled from another thread
// (common/terminal_progress.h): the reader's threads count the rows they decode into it.
#pragma once

#include <atomic>
#include <cstdint>

namespace memtap {

struct ReadProgress {
  // The rows the read will visit: a database's rowid span, an upper bound where rowids
  // skip, made exact once read_recording has read them all; 0 while not known, and for the
  // formats read whole (CSVs, snapshots) and reads of one process's or time range's rows.
  std::atomic<uint64_t> rows_total{0};
  std::atomic<uint64_t> rows_read{0};
};

// A scan's rows into ReadProgress::rows_read (null: nowhere): the shared counter is touched
// once per kStep rows, so that threads decoding millions of rows each do not contend on it,
// and the rest when the scan ends.
class RowCounter {
 public:
  explicit RowCounter(std::atomic<uint64_t>* rows_read) : rows_read_(rows_read) {}
  ~RowCounter() {
    if (rows_read_ != nullptr && pending_ != 0) {
      rows_read_->fetch_add(pending_, std::memory_order_relaxed);
    }
  }
  RowCounter(const RowCounter&) = delete;
  RowCounter& operator=(const RowCounter&) = delete;

  void row() {
    if (++pending_ < kStep) return;
    if (rows_read_ != nullptr) rows_read_->fetch_add(pending_, std::memory_order_relaxed);
    pending_ = 0;
  }

 private:
  static constexpr uint64_t kStep = 4096;
  std::atomic<uint64_t>* rows_read_;
  uint64_t pending_ = 0;
};

}  // namespace memtap
