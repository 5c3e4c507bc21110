// See range_lanes.h.
#include "monitor/engine/range_lanes.h"

#include <algorithm>

namespace memtap {

namespace {

void keep_too_deep(RangeLanes& ranges, const RangeSpan& span, size_t kept_per_lane) {
  ranges.too_deep_longest_ns =
      std::max(ranges.too_deep_longest_ns, span.end_ts_ns - span.start_ts_ns);
  keep_thinned(ranges.too_deep_spans, span, kept_per_lane,
               [](const RangeSpan& r) { return r.start_ts_ns; });
}

}  // namespace

void range_started(RangeLanes& ranges, int64_t ts_ns, uint32_t name, size_t kept_per_lane) {
  if (ranges.open.size() >= RangeLanes::kMaxOpen) {
    // Its end, finding no open range of its name, is unmatched: it is kept as an instant.
    ++ranges.too_deep;
    keep_too_deep(ranges, RangeSpan{ts_ns, ts_ns, name}, kept_per_lane);
    return;
  }
  // The lowest lane no open range holds.
  uint32_t lane = 0;
  while (lane < RangeLanes::kMaxLanes &&
         std::any_of(ranges.open.begin(), ranges.open.end(),
                     [&](const OpenRange& o) { return o.lane == lane; })) {
    ++lane;
  }
  if (lane == RangeLanes::kMaxLanes) {
    ++ranges.too_deep;
    lane = RangeLanes::kNoLane;  // kept open, so that its end closes it and not an outer one
  }
  ranges.open.push_back({RangeSpan{ts_ns, ts_ns, name}, lane});
}

void range_ended(RangeLanes& ranges, int64_t ts_ns, uint32_t name, size_t kept_per_lane) {
  auto it = std::find_if(ranges.open.rbegin(), ranges.open.rend(),
                         [&](const OpenRange& o) { return o.span.name == name; });
  if (it == ranges.open.rend()) {
    ++ranges.unmatched_ends;
    return;
  }
  const OpenRange closed = *it;
  ranges.open.erase(std::next(it).base());
  RangeSpan span = closed.span;
  span.end_ts_ns = std::max(ts_ns, span.start_ts_ns);
  if (closed.lane == RangeLanes::kNoLane) return keep_too_deep(ranges, span, kept_per_lane);
  if (ranges.lanes.size() <= closed.lane) ranges.lanes.resize(closed.lane + 1);
  keep_thinned(ranges.lanes[closed.lane], span, kept_per_lane,
               [](const RangeSpan& r) { return r.start_ts_ns; });
}

TrackSpan ranges_between(const RangeLane& lane, int64_t t0_ns, int64_t t1_ns) {
  // A lane's ranges are disjoint, so by start they are also in order of their ends.
  const auto begin = lane.kept.begin();
  const auto first = std::lower_bound(
      begin, lane.kept.end(), t0_ns, [](const RangeSpan& r, int64_t t) { return r.end_ts_ns < t; });
  const auto last =
      std::upper_bound(first, lane.kept.end(), t1_ns,
                       [](int64_t t, const RangeSpan& r) { return t < r.start_ts_ns; });
  return {size_t(first - begin), size_t(last - begin)};
}

uint64_t too_deep_between(const RangeLanes& ranges, int64_t t0_ns, int64_t t1_ns) {
  uint64_t count = 0;
  for (const OpenRange& o : ranges.open) {
    if (o.lane == RangeLanes::kNoLane && o.span.start_ts_ns <= t1_ns) ++count;
  }
  // These overlap each other, so only their starts are in order: from the earliest start
  // that could still reach t0.
  const RangeLane& deep = ranges.too_deep_spans;
  const int64_t from = t0_ns < INT64_MIN + ranges.too_deep_longest_ns
                           ? INT64_MIN
                           : t0_ns - ranges.too_deep_longest_ns;
  auto it = std::lower_bound(deep.kept.begin(), deep.kept.end(), from,
                             [](const RangeSpan& r, int64_t t) { return r.start_ts_ns < t; });
  for (; it != deep.kept.end() && it->start_ts_ns <= t1_ns; ++it) {
    if (it->end_ts_ns >= t0_ns) count += deep.stride;
  }
  return count;
}

}  // namespace memtap
