// See series.h.
#include "monitor/engine/timeline/series.h"

#include <algorithm>

#include "monitor/engine/timeline/lttb.h"

namespace memtap::timeline {

namespace {

SeriesLimits sanitized(SeriesLimits l) {
  // The newest points not yet in a closed level-0 bucket are answered from the window, so
  // it must hold at least one bucket's worth.
  l.window_points = std::max(l.window_points, std::max<uint32_t>(1, l.pyramid.base_bucket_points));
  return l;
}

EnvelopeBucket point_bucket(const CurvePoint& p) {
  return bucket_of_point(p.ts_ns, p.value_bytes);
}

// Last bucket number in [first, end) whose t_first_ns <= t, or `first` if none.
uint64_t bucket_in_force(const MinMaxPyramid& p, size_t level, uint64_t first, uint64_t end,
                         int64_t t) {
  uint64_t lo = first, hi = end;  // first bucket with t_first_ns > t
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (p.bucket(level, mid).t_first_ns <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > first ? lo - 1 : first;
}

uint64_t first_bucket_after(const MinMaxPyramid& p, size_t level, uint64_t first, uint64_t end,
                            int64_t t) {
  uint64_t lo = first, hi = end;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (p.bucket(level, mid).t_first_ns <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// A bucket wider than this many 1/max_points of the range is split where finer levels hold
// it. Not fewer: the level chosen for a range can be a coarser one than the count allows
// (a finer level's ring no longer reaches back to t0), leaving buckets 2-4 slots wide that
// the chart draws as two points anyway; splitting those doubled the points of a zoomed-out
// 10 M-event curve and its redraw took 29 ms instead of 20 (memtap_bench_gui).
constexpr int64_t kSplitSlots = 4;

// Merges neighbours whose first points fall in the same 1/max_points of [t0, t1].
std::vector<EnvelopeBucket> merge_into_slots(const std::vector<EnvelopeBucket>& in, int64_t t0,
                                             int64_t t1, size_t max_points) {
  std::vector<EnvelopeBucket> out;
  out.reserve(max_points);
  const double width = (double(t1) - double(t0) + 1.0) / double(max_points);
  size_t previous = 0;
  for (const EnvelopeBucket& b : in) {
    size_t slot = 0;
    if (b.t_first_ns > t0)
      slot = std::min(max_points - 1, size_t((double(b.t_first_ns) - double(t0)) / width));
    if (!out.empty() && slot == previous)
      out.back() = merge_buckets(out.back(), b);
    else
      out.push_back(b);
    previous = slot;
  }
  return out;
}

}  // namespace

Series::Series(const SeriesLimits& limits)
    : window_(sanitized(limits).window_points), pyramid_(limits.pyramid) {}

bool Series::window_covers(int64_t t0_ns) const {
  return window_.size() > 0 && (window_.first_index() == 0 || window_.at(0).ts_ns <= t0_ns);
}

CurveQuery Series::query(int64_t t0_ns, int64_t t1_ns, size_t max_points, WideBuckets wide) const {
  CurveQuery q;
  if (t1_ns < t0_ns || empty()) return q;
  if (!window_covers(t0_ns)) {
    q.resolution = Resolution::kEnvelope;
    q.envelope = envelope(t0_ns, t1_ns, max_points, wide);
    return q;
  }
  size_t begin = window_.upper_bound(t0_ns);
  if (begin > 0) --begin;  // the point in force at t0
  size_t end = window_.upper_bound(t1_ns);
  std::vector<CurvePoint> points;
  if (begin < end) {
    points.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) points.push_back(window_.at(i));
  }
  return downsample_points(std::move(points), max_points);
}

void Series::collect_envelope(int64_t t0_ns, int64_t t1_ns, size_t max_points,
                              std::vector<HeldBucket>& out) const {
  const MinMaxPyramid& p = pyramid_;
  // Appends b unless it starts after t1; false once the range is done.
  auto emit = [&](const EnvelopeBucket& b, int level = HeldBucket::kNotSplit, uint64_t number = 0) {
    if (b.t_first_ns > t1_ns) return false;
    out.push_back({b, level, number});
    return true;
  };

  // Levels 0..closed_levels-1 have closed buckets (a level closes buckets only after the
  // one below has).
  size_t closed_levels = 0;
  while (closed_levels < p.levels() && p.end_bucket(closed_levels) > 0) ++closed_levels;

  uint64_t cursor = 0;  // point index where the part still to emit begins
  if (closed_levels > 0) {
    // The finest level that reaches back to t0 with at most max_points buckets in range.
    // The coarsest level with closed buckets always reaches back to the start: it has not
    // dropped any (the top never drops; a level below it with none above has < 2).
    size_t level = closed_levels - 1;
    for (size_t j = 0; j < closed_levels; ++j) {
      uint64_t first = p.first_bucket(j), end = p.end_bucket(j);
      if (first > 0 && p.bucket(j, first).t_first_ns > t0_ns) continue;
      uint64_t from = bucket_in_force(p, j, first, end, t0_ns);
      if (first_bucket_after(p, j, first, end, t1_ns) - from <= max_points) {
        level = j;
        break;
      }
    }
    uint64_t first = p.first_bucket(level), end = p.end_bucket(level);
    for (uint64_t k = bucket_in_force(p, level, first, end, t0_ns); k < end; ++k)
      if (!emit(p.bucket(level, k), int(level), k)) return;
    // The points after this level's last closed bucket: its open bucket is made of closed
    // buckets of the level below, and so on down to level 0's open bucket, whose points
    // the window holds. Each step emits the level below's closed buckets if it still holds
    // them, else (the top's open bucket can outgrow the ring below it) the open bucket.
    cursor = p.closed_end_point(level);
    for (size_t below = level; below-- > 0;) {
      uint64_t number = cursor / p.points_per_bucket(below);
      if (number >= p.first_bucket(below)) {
        for (; number < p.end_bucket(below); ++number)
          if (!emit(p.bucket(below, number), int(below), number)) return;
      } else {
        EnvelopeBucket open;
        if (p.open_bucket(below + 1, &open) && !emit(open)) return;
      }
      cursor = p.closed_end_point(below);
    }
  }
  if (window_.first_index() <= cursor) {
    for (uint64_t i = cursor; i < window_.pushed(); ++i)
      if (!emit(point_bucket(window_.at_index(i)))) return;
  } else {
    EnvelopeBucket open;  // unreachable while the window holds a level-0 bucket's worth
    if (p.open_bucket(0, &open)) emit(open);
  }
}

std::vector<EnvelopeBucket> Series::envelope(int64_t t0_ns, int64_t t1_ns, size_t max_points,
                                             WideBuckets wide) const {
  std::vector<EnvelopeBucket> out;
  if (t1_ns < t0_ns || max_points == 0 || empty()) return out;
  std::vector<HeldBucket> held;
  collect_envelope(t0_ns, t1_ns, max_points, held);
  if (wide == WideBuckets::kSplit) {
    const uint64_t range = uint64_t(t1_ns - t0_ns);
    const int64_t slot_ns = max_points >= range ? 1 : int64_t(range / max_points);
    held = split_wide(std::move(held), t1_ns, kSplitSlots * slot_ns);
  }
  out.reserve(held.size());
  for (const HeldBucket& h : held) out.push_back(h.bucket);
  // Keep only the last of the buckets that begin at or before t0: the one in force there.
  size_t skip = 0;
  while (skip + 1 < out.size() && out[skip + 1].t_first_ns <= t0_ns) ++skip;
  out.erase(out.begin(), out.begin() + ptrdiff_t(skip));
  if (out.size() > max_points) out = merge_into_slots(out, t0_ns, t1_ns, max_points);
  return out;
}

std::vector<Series::HeldBucket> Series::split_wide(std::vector<HeldBucket> in, int64_t t1_ns,
                                                   int64_t max_span_ns) const {
  const MinMaxPyramid& p = pyramid_;
  std::vector<HeldBucket> out;
  out.reserve(in.size());
  // Children of a bucket are split in turn, depth first, so the output stays in time
  // order; `pending` holds the later children still to look at, the nearest last.
  std::vector<HeldBucket> pending;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t next_ns = i + 1 < in.size() ? in[i + 1].bucket.t_first_ns : t1_ns;
    pending.push_back(in[i]);
    while (!pending.empty()) {
      HeldBucket h = pending.back();
      pending.pop_back();
      if (h.bucket.t_first_ns > t1_ns) continue;  // a child past the range
      // Where it ends on screen: where the next bucket begins (a step curve holds the
      // last value until then); for a right half that is the bucket after it.
      const int64_t end_ns = pending.empty() ? next_ns : pending.back().bucket.t_first_ns;
      if (end_ns - h.bucket.t_first_ns <= max_span_ns || h.level <= 0) {
        out.push_back(h);
        continue;
      }
      // Its children: 2 below any level but the top, whose buckets double in width as it
      // merges; the level below has them while its ring still reaches back that far.
      const size_t below = size_t(h.level - 1);
      const uint64_t ratio = p.points_per_bucket(size_t(h.level)) / p.points_per_bucket(below);
      const uint64_t first = h.number * ratio, end = first + ratio;
      if (first < p.first_bucket(below) || end > p.end_bucket(below)) {
        out.push_back(h);
        continue;
      }
      for (uint64_t k = end; k-- > first;) pending.push_back({p.bucket(below, k), int(below), k});
    }
  }
  return out;
}

size_t Series::memory_bytes() const {
  return sizeof(Series) + window_.memory_bytes() + pyramid_.memory_bytes();
}

size_t Series::bound_bytes(const SeriesLimits& limits) {
  return sizeof(Series) + PointWindow::bound_bytes(sanitized(limits).window_points) +
         MinMaxPyramid::bound_bytes(limits.pyramid);
}

CurveQuery downsample_points(std::vector<CurvePoint> points, size_t max_points) {
  CurveQuery q;
  if (points.size() <= max_points) {
    q.points = std::move(points);
    return q;
  }
  // Relative times keep full precision in a double: epoch nanoseconds (~1.7e18) do not.
  std::vector<double> x(points.size()), y(points.size());
  const int64_t base = points.front().ts_ns;
  for (size_t i = 0; i < points.size(); ++i) {
    x[i] = double(points[i].ts_ns - base);
    y[i] = double(points[i].value_bytes);
  }
  std::vector<size_t> kept = lttb_by_time(x, y, max_points);
  q.resolution = Resolution::kLttb;
  q.points.reserve(kept.size());
  for (size_t i : kept) q.points.push_back(points[i]);
  return q;
}

std::vector<double> sample_step(const CurveQuery& query, int64_t t0_ns, int64_t t1_ns,
                                size_t count) {
  std::vector<double> values;
  if (count == 0) return values;
  values.reserve(count);
  const bool buckets = query.resolution == Resolution::kEnvelope;
  const size_t n = buckets ? query.envelope.size() : query.points.size();
  if (n == 0) return std::vector<double>(count, 0.0);
  auto start = [&](size_t i) {
    return buckets ? query.envelope[i].t_first_ns : query.points[i].ts_ns;
  };
  auto value = [&](size_t i) {
    return double(buckets ? query.envelope[i].last_bytes : query.points[i].value_bytes);
  };
  size_t i = 0;  // the item in force
  // In unsigned arithmetic: a range across the whole of int64 (a recording's made-up or
  // hostile times) overflows a signed span, and its last sample rounded up past INT64_MAX
  // as a double.
  const uint64_t span = uint64_t(t1_ns) - uint64_t(t0_ns);
  for (size_t s = 0; s < count; ++s) {
    uint64_t offset = span;
    if (count != 1 && s + 1 != count) {
      const double at = double(span) * double(s) / double(count - 1);
      offset = at < double(span) ? uint64_t(at) : span;
    }
    const int64_t t = int64_t(uint64_t(t0_ns) + offset);
    while (i + 1 < n && start(i + 1) <= t) ++i;
    values.push_back(value(i));
  }
  return values;
}

}  // namespace memtap::timeline
