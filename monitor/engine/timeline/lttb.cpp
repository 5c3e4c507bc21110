// See lttb.h. The bucket boundaries follow the reference implementation: bucket i holds
// the points [floor(i*(n-2)/(max_points-2)) + 1, floor((i+1)*(n-2)/(max_points-2)) + 1),
// so every inner point is in exactly one bucket and the last bucket ends just before the
// last point. The floors are integer divisions: in floating point, (max_points-2) * every
// can land just below n-2 and leave a point out of every bucket.
#include "monitor/engine/timeline/lttb.h"

#include <algorithm>
#include <cmath>

namespace memtap::timeline {

std::vector<size_t> lttb(std::span<const double> x, std::span<const double> y, size_t max_points) {
  const size_t n = std::min(x.size(), y.size());
  std::vector<size_t> kept;
  if (max_points >= n) {
    kept.resize(n);
    for (size_t i = 0; i < n; ++i) kept[i] = i;
    return kept;
  }
  if (max_points == 0) return kept;
  kept.reserve(max_points);
  kept.push_back(0);
  if (max_points == 1) return kept;
  if (max_points == 2) {
    kept.push_back(n - 1);
    return kept;
  }

  const size_t inner = n - 2, buckets = max_points - 2;
  auto bucket_begin = [&](size_t i) { return std::min(n - 1, i * inner / buckets + 1); };
  size_t a = 0;  // the point kept last
  for (size_t i = 0; i + 2 < max_points; ++i) {
    const size_t begin = bucket_begin(i);
    const size_t end = std::max(begin + 1, bucket_begin(i + 1));
    // The third corner: the average of the next bucket (the last point, for the last one).
    const size_t next_begin = end;
    const size_t next_end = std::min(n, std::max(next_begin + 1, bucket_begin(i + 2)));
    double avg_x = 0, avg_y = 0;
    for (size_t j = next_begin; j < next_end; ++j) {
      avg_x += x[j];
      avg_y += y[j];
    }
    const double count = double(next_end - next_begin);
    avg_x /= count;
    avg_y /= count;

    const double ax = x[a], ay = y[a];
    double best_area = -1;
    size_t best = begin;
    for (size_t j = begin; j < end; ++j) {
      // Twice the triangle's area; the factor does not change which point wins.
      double area = std::fabs((ax - avg_x) * (y[j] - ay) - (ax - x[j]) * (avg_y - ay));
      if (area > best_area) {
        best_area = area;
        best = j;
      }
    }
    kept.push_back(best);
    a = best;
  }
  kept.push_back(n - 1);
  return kept;
}

}  // namespace memtap::timeline
