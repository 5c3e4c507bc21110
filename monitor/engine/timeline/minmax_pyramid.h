// The whole history of one curve at bucket resolution, in memory that does not grow with
// the session: levels of buckets holding the first, least, greatest and last value of the
// points they cover (and when), each level's buckets twice as wide as the level below.
//
// Buckets are counted in points, not in time: a bucket of level j covers
// base_bucket_points * 2^j consecutive points, so busy stretches get more buckets than quiet
// ones and no time unit has to be guessed up front. Bucket number k of a level covers the
// points [k * points_per_bucket, (k+1) * points_per_bucket); numbers count from the start of
// the curve, so every level's bucket edges are also edges of the level below.
//
// Every level but the top keeps its newest `level_buckets` buckets (a ring), so level j
// reaches back level_buckets * base_bucket_points * 2^j points. The top level keeps all of
// history: when it fills up, neighbouring buckets merge in pairs and its buckets double in
// width. Memory: levels * level_buckets * sizeof(EnvelopeBucket) at most (64 bytes a
// bucket), whatever the session's length.
//
// Each level also has an open bucket: the closed buckets of the level below that do not
// yet make a whole bucket of its own. Only level 0's open bucket sees points; a closed
// bucket is passed up one level, so adding a point costs O(1) amortized.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memtap::timeline {

// The points of a bucket, as M4 aggregation keeps them (Jugel et al., VLDB 2014): the time
// and value of its first and last point, and its least and greatest value with the time
// each was first reached. A step curve through those four in time order (bucket_steps)
// meets each extreme when it happened, however many pixels the bucket spans. Min and max
// alone could only be drawn over the whole bucket: buckets count points, so where a curve
// went quiet after a drop one bucket spans many pixels, and its max drawn across it showed
// memory held long after it was freed.
struct EnvelopeBucket {
  int64_t t_first_ns = 0;
  int64_t t_last_ns = 0;
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;
  int64_t last_bytes = 0;
  int64_t first_bytes = 0;
  int64_t t_min_ns = 0;
  int64_t t_max_ns = 0;
};

inline EnvelopeBucket bucket_of_point(int64_t ts_ns, int64_t value_bytes) {
  return {ts_ns, ts_ns, value_bytes, value_bytes, value_bytes, value_bytes, ts_ns, ts_ns};
}

// A later point into b. An extreme keeps the time it was first reached.
inline void add_to_bucket(EnvelopeBucket& b, int64_t ts_ns, int64_t value_bytes) {
  b.t_last_ns = ts_ns;
  b.last_bytes = value_bytes;
  if (value_bytes < b.min_bytes) {
    b.min_bytes = value_bytes;
    b.t_min_ns = ts_ns;
  }
  if (value_bytes > b.max_bytes) {
    b.max_bytes = value_bytes;
    b.t_max_ns = ts_ns;
  }
}

// a, then b after it.
inline EnvelopeBucket merge_buckets(const EnvelopeBucket& a, const EnvelopeBucket& b) {
  EnvelopeBucket m = a;
  m.t_last_ns = b.t_last_ns;
  m.last_bytes = b.last_bytes;
  if (b.min_bytes < a.min_bytes) {
    m.min_bytes = b.min_bytes;
    m.t_min_ns = b.t_min_ns;
  }
  if (b.max_bytes > a.max_bytes) {
    m.max_bytes = b.max_bytes;
    m.t_max_ns = b.t_max_ns;
  }
  return m;
}

// A bucket's first point, extremes and last point in time order, one value a time (of two
// at the same time, the later point's): what a step curve draws for it. Its value at t is
// that of the last of them at or before t.
struct BucketSteps {
  struct Step {
    int64_t ts_ns;
    int64_t value_bytes;
  };
  Step steps[4];
  int count = 0;
};

inline BucketSteps bucket_steps(const EnvelopeBucket& b) {
  BucketSteps out;
  auto put = [&out](int64_t ts_ns, int64_t value_bytes) {
    if (out.count > 0 && out.steps[out.count - 1].ts_ns == ts_ns)
      out.steps[out.count - 1].value_bytes = value_bytes;
    else
      out.steps[out.count++] = {ts_ns, value_bytes};
  };
  put(b.t_first_ns, b.first_bytes);
  const bool min_first = b.t_min_ns <= b.t_max_ns;
  put(min_first ? b.t_min_ns : b.t_max_ns, min_first ? b.min_bytes : b.max_bytes);
  put(min_first ? b.t_max_ns : b.t_min_ns, min_first ? b.max_bytes : b.min_bytes);
  put(b.t_last_ns, b.last_bytes);
  return out;
}

inline int64_t bucket_value_at(const EnvelopeBucket& b, int64_t t_ns) {
  const BucketSteps s = bucket_steps(b);
  int64_t value = s.steps[0].value_bytes;
  for (int i = 1; i < s.count && s.steps[i].ts_ns <= t_ns; ++i) value = s.steps[i].value_bytes;
  return value;
}

struct PyramidLimits {
  uint32_t base_bucket_points = 256;  // points in a level-0 bucket (>= 1)
  uint32_t level_buckets = 1024;      // buckets a level holds (even, >= 4)
  uint32_t levels = 12;               // >= 1; the last one is the top
};

class MinMaxPyramid {
 public:
  explicit MinMaxPyramid(const PyramidLimits& limits);

  void add(int64_t ts_ns, int64_t value_bytes) {
    ++points_;
    Level& l0 = levels_[0];
    if (l0.open_children == 0)
      l0.open = bucket_of_point(ts_ns, value_bytes);
    else
      add_to_bucket(l0.open, ts_ns, value_bytes);
    if (++l0.open_children == l0.children_per_bucket) close_open(0);
  }

  uint64_t points() const { return points_; }
  size_t levels() const { return levels_.size(); }
  size_t top() const { return levels_.size() - 1; }

  // Closed buckets of a level: numbers [first_bucket, end_bucket) are held.
  uint64_t first_bucket(size_t level) const;
  uint64_t end_bucket(size_t level) const { return levels_[level].closed; }
  uint64_t points_per_bucket(size_t level) const { return levels_[level].points_per_bucket; }
  const EnvelopeBucket& bucket(size_t level, uint64_t number) const;
  // Point index where the level's closed buckets end (and its open bucket begins).
  uint64_t closed_end_point(size_t level) const {
    return levels_[level].closed * levels_[level].points_per_bucket;
  }
  // The level's open bucket; false when it is empty.
  bool open_bucket(size_t level, EnvelopeBucket* out) const {
    if (levels_[level].open_children == 0) return false;
    *out = levels_[level].open;
    return true;
  }

  size_t memory_bytes() const;
  static size_t bound_bytes(const PyramidLimits& limits);

 private:
  struct Level {
    std::vector<EnvelopeBucket> buckets;  // a ring below the top; in order at the top
    uint64_t closed = 0;                  // buckets closed so far (top: held, after merges)
    uint64_t points_per_bucket = 0;
    uint64_t children_per_bucket = 0;  // points (level 0) or buckets of the level below
    EnvelopeBucket open;
    uint64_t open_children = 0;
  };

  void close_open(size_t level);
  void feed(size_t level, const EnvelopeBucket& child);
  void store(Level& level, const EnvelopeBucket& bucket);

  std::vector<Level> levels_;
  uint32_t level_buckets_;
  uint64_t points_ = 0;
};

}  // namespace memtap::timeline
