// See lttb.h. lttb's bucket boundaries follow the reference implementation: bucket i holds
// the points [floor(i*(n-2)/(max_points-2)) + 1, floor((i+1)*(n-2)/(max_points-2)) + 1),
// so every inner point is in exactly one bucket and the last bucket ends just before the
// last point. The floors are integer divisions: in floating point, (max_points-2) * every
// can land just below n-2 and leave a point out of every bucket.
#include "monitor/engine/timeline/lttb.h"

#include <algorithm>
#include <cmath>

namespace memtap::timeline {

namespace {

// The algorithm over given buckets: bucket i holds the points [edges[i], edges[i+1]), none
// empty; edges run from 1 to n - 1, so the first and last points are in none of them.
std::vector<size_t> largest_triangles(std::span<const double> x, std::span<const double> y,
                                      const std::vector<size_t>& edges) {
  const size_t n = std::min(x.size(), y.size());
  std::vector<size_t> kept;
  kept.reserve(edges.size() + 1);
  kept.push_back(0);
  size_t a = 0;  // the point kept last
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    const size_t begin = edges[i], end = edges[i + 1];
    // The third corner: the average of the next bucket (the last point, for the last one).
    const size_t next_begin = end;
    const size_t next_end = i + 2 < edges.size() ? edges[i + 2] : n;
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

// The cases both bucketings share: true with *kept set when no bucket is needed.
bool trivial(size_t n, size_t max_points, std::vector<size_t>* kept) {
  kept->clear();
  if (max_points >= n) {
    kept->resize(n);
    for (size_t i = 0; i < n; ++i) (*kept)[i] = i;
    return true;
  }
  if (max_points == 0) return true;
  kept->push_back(0);
  if (max_points == 1) return true;
  if (max_points == 2) {
    kept->push_back(n - 1);
    return true;
  }
  return false;
}

}  // namespace

std::vector<size_t> lttb(std::span<const double> x, std::span<const double> y, size_t max_points) {
  const size_t n = std::min(x.size(), y.size());
  std::vector<size_t> kept;
  if (trivial(n, max_points, &kept)) return kept;
  // max_points < n, so each of the buckets holds at least one point.
  const size_t inner = n - 2, buckets = max_points - 2;
  std::vector<size_t> edges(buckets + 1);
  for (size_t i = 0; i <= buckets; ++i) edges[i] = i * inner / buckets + 1;
  return largest_triangles(x, y, edges);
}

std::vector<size_t> lttb_by_time(std::span<const double> x, std::span<const double> y,
                                 size_t max_points) {
  const size_t n = std::min(x.size(), y.size());
  std::vector<size_t> kept;
  if (trivial(n, max_points, &kept)) return kept;
  const size_t buckets = max_points - 2;
  const double from = x[0], width = (x[n - 1] - x[0]) / double(buckets);
  std::vector<size_t> edges;
  edges.reserve(buckets + 1);
  edges.push_back(1);
  for (size_t i = 1; i < buckets; ++i) {
    const double edge = from + width * double(i);
    const size_t at =
        size_t(std::lower_bound(x.begin() + 1, x.begin() + ptrdiff_t(n - 1), edge) - x.begin());
    if (at > edges.back()) edges.push_back(at);  // an empty bucket is none
  }
  if (n - 1 > edges.back()) edges.push_back(n - 1);
  return largest_triangles(x, y, edges);
}

}  // namespace memtap::timeline
