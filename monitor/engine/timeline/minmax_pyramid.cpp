// See minmax_pyramid.h.
#include "monitor/engine/timeline/minmax_pyramid.h"

namespace memtap::timeline {

namespace {
PyramidLimits sanitized(PyramidLimits l) {
  l.base_bucket_points = std::max<uint32_t>(1, l.base_bucket_points);
  l.level_buckets = std::max<uint32_t>(4, l.level_buckets + (l.level_buckets & 1));
  l.levels = std::clamp<uint32_t>(l.levels, 1, 48);
  return l;
}
}  // namespace

MinMaxPyramid::MinMaxPyramid(const PyramidLimits& requested) {
  PyramidLimits limits = sanitized(requested);
  level_buckets_ = limits.level_buckets;
  levels_.resize(limits.levels);
  uint64_t points = limits.base_bucket_points;
  for (size_t j = 0; j < levels_.size(); ++j) {
    levels_[j].points_per_bucket = points;
    levels_[j].children_per_bucket = j == 0 ? limits.base_bucket_points : 2;
    points *= 2;
  }
}

uint64_t MinMaxPyramid::first_bucket(size_t level) const {
  const Level& l = levels_[level];
  if (level == top() || l.closed <= level_buckets_) return 0;
  return l.closed - level_buckets_;
}

const EnvelopeBucket& MinMaxPyramid::bucket(size_t level, uint64_t number) const {
  const Level& l = levels_[level];
  if (level == top()) return l.buckets[size_t(number)];
  return l.buckets[size_t(number % level_buckets_)];
}

void MinMaxPyramid::store(Level& l, const EnvelopeBucket& b) {
  // Grow by doubling up to level_buckets_ exactly, so capacity never passes the bound.
  size_t slot = &l == &levels_.back() ? size_t(l.closed) : size_t(l.closed % level_buckets_);
  if (slot >= l.buckets.size()) {
    if (l.buckets.size() == l.buckets.capacity())
      l.buckets.reserve(
          std::min<size_t>(level_buckets_, std::max<size_t>(8, 2 * l.buckets.size())));
    l.buckets.push_back(b);
  } else {
    l.buckets[slot] = b;
  }
  ++l.closed;
}

void MinMaxPyramid::close_open(size_t level) {
  Level& l = levels_[level];
  EnvelopeBucket b = l.open;
  l.open_children = 0;
  store(l, b);
  if (level != top()) {
    feed(level + 1, b);
    return;
  }
  if (l.closed == level_buckets_) {
    // The top is full: halve its resolution. Its open bucket is empty right now (it was
    // just closed), so no bucket straddles the new edges.
    for (size_t i = 0; i < level_buckets_ / 2; ++i)
      l.buckets[i] = merge_buckets(l.buckets[2 * i], l.buckets[2 * i + 1]);
    l.buckets.resize(level_buckets_ / 2);
    l.closed = level_buckets_ / 2;
    l.points_per_bucket *= 2;
    l.children_per_bucket *= 2;
  }
}

void MinMaxPyramid::feed(size_t level, const EnvelopeBucket& child) {
  Level& l = levels_[level];
  l.open = l.open_children == 0 ? child : merge_buckets(l.open, child);
  if (++l.open_children == l.children_per_bucket) close_open(level);
}

size_t MinMaxPyramid::memory_bytes() const {
  size_t bytes = levels_.capacity() * sizeof(Level);
  for (const Level& l : levels_) bytes += l.buckets.capacity() * sizeof(EnvelopeBucket);
  return bytes;
}

size_t MinMaxPyramid::bound_bytes(const PyramidLimits& requested) {
  PyramidLimits l = sanitized(requested);
  return size_t(l.levels) * (sizeof(Level) + size_t(l.level_buckets) * sizeof(EnvelopeBucket));
}

}  // namespace memtap::timeline
