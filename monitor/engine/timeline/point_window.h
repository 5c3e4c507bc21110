// The newest points of one curve at full resolution: a ring of at most `capacity` points
// that forgets the oldest as new ones come. Points are numbered from 0 in the order they
// were pushed (the curve's point index, shared with the pyramid), so a caller can tell
// which part of the history the ring still holds.
//
// The ring starts small and doubles up to its capacity, so a curve that changes rarely
// costs little. Growing stops before the first point is overwritten, which keeps point i at
// slot i & mask for the ring's whole life.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memtap::timeline {

struct CurvePoint {
  int64_t ts_ns = 0;
  int64_t value_bytes = 0;
};

class PointWindow {
 public:
  // capacity is rounded up to a power of two (at least 2).
  explicit PointWindow(uint32_t capacity) {
    capacity_ = 2;
    while (capacity_ < capacity) capacity_ *= 2;
  }

  void push(int64_t ts_ns, int64_t value_bytes) {
    if (pushed_ == ring_.size() && ring_.size() < capacity_) grow();
    ring_[pushed_ & (ring_.size() - 1)] = {ts_ns, value_bytes};
    ++pushed_;
  }

  size_t size() const { return size_t(std::min<uint64_t>(pushed_, ring_.size())); }
  uint64_t pushed() const { return pushed_; }
  // Point index of the oldest point held.
  uint64_t first_index() const { return pushed_ - size(); }
  // The point with index `index` (first_index() <= index < pushed()).
  const CurvePoint& at_index(uint64_t index) const { return ring_[index & (ring_.size() - 1)]; }
  // The i-th oldest point held.
  const CurvePoint& at(size_t i) const { return at_index(first_index() + i); }

  // Position (0..size()) of the first point held with ts_ns > t.
  size_t upper_bound(int64_t t) const {
    size_t lo = 0, hi = size();
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (at(mid).ts_ns <= t)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }

  uint32_t capacity() const { return capacity_; }
  size_t memory_bytes() const { return ring_.capacity() * sizeof(CurvePoint); }
  static size_t bound_bytes(uint32_t capacity) {
    return size_t(PointWindow(capacity).capacity_) * sizeof(CurvePoint);
  }

 private:
  void grow() {
    size_t n = ring_.empty() ? std::min<size_t>(capacity_, 16) : ring_.size() * 2;
    std::vector<CurvePoint> bigger(n);
    std::copy(ring_.begin(), ring_.end(), bigger.begin());
    ring_.swap(bigger);
  }

  std::vector<CurvePoint> ring_;  // size: a power of two <= capacity_
  uint32_t capacity_;
  uint64_t pushed_ = 0;
};

}  // namespace memtap::timeline
