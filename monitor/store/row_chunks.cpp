// See row_chunks.h.
#include "monitor/store/row_chunks.h"

#include <algorithm>
#include <utility>

namespace memtap {

void RowChunks::push(const DumpRow* rows, size_t count) {
  rows_ += count;
  while (count > 0) {
    if (chunks_.empty() || chunks_.back().size() >= kChunkRows) {
      std::vector<DumpRow>& chunk = chunks_.emplace_back();
      if (!spares_.empty()) {
        chunk.swap(spares_.back());
        spares_.pop_back();
      }
      chunk.reserve(kChunkRows);
    }
    std::vector<DumpRow>& into = chunks_.back();
    const size_t n = std::min(count, kChunkRows - into.size());
    into.insert(into.end(), rows, rows + n);
    rows += n;
    count -= n;
  }
}

std::vector<DumpRow> RowChunks::take_front() {
  if (chunks_.empty()) return {};
  std::vector<DumpRow> chunk = std::move(chunks_.front());
  chunks_.pop_front();
  rows_ -= chunk.size();
  return chunk;
}

void RowChunks::recycle(std::vector<DumpRow> chunk) {
  if (chunk.capacity() < kChunkRows || spares_.size() >= kMaxSpares) return;
  chunk.clear();
  spares_.push_back(std::move(chunk));
}

}  // namespace memtap
