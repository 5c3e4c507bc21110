// A first-in first-out queue of DumpRows in fixed-size chunks whose memory is reused.
//
// The writer's in-memory queue was one vector that grew by doubling and was swapped with the
// writer's: under a flood every growth copied what was queued and faulted in fresh pages,
// which cost the receiving thread (the one that appends) a fifth of its time. Chunks never
// move once filled, and a written chunk comes back as a spare, its pages still mapped.
// Not thread-safe: the writer uses it under its own lock.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "monitor/model/dump_row.h"

namespace memtap {

class RowChunks {
 public:
  static constexpr size_t kChunkRows = 8192;
  // Spares kept beyond what is queued: enough to cover the writer's swings, not a flood's.
  static constexpr size_t kMaxSpares = 16;

  void push(const DumpRow* rows, size_t count);
  // The oldest chunk (moved out; empty if none). Give it back with recycle() once used.
  std::vector<DumpRow> take_front();
  void recycle(std::vector<DumpRow> chunk);

  bool empty() const { return rows_ == 0; }
  size_t rows() const { return rows_; }

 private:
  std::deque<std::vector<DumpRow>> chunks_;
  std::vector<std::vector<DumpRow>> spares_;
  size_t rows_ = 0;
};

}  // namespace memtap
