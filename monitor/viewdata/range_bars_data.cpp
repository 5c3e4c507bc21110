// See range_bars_data.h.
#include "monitor/viewdata/range_bars_data.h"

#include <algorithm>

namespace memtap::viewdata {

namespace {

// The lane's ranges over the span, those too narrow to tell apart joined with their
// neighbours.
void lane_bars(const RangeLane& lane, uint32_t index, const StringTable& strings, int64_t t0_ns,
               int64_t t1_ns, double column_ns, std::vector<RangeBar>* out) {
  const TrackSpan span = ranges_between(lane, t0_ns, t1_ns);
  const double narrow_ns = kMinRangeBarColumns * column_ns;
  bool last_narrow = false;
  for (size_t i = span.first; i < span.last; ++i) {
    const RangeSpan& r = lane.kept[i];
    const bool narrow = double(r.end_ts_ns) - double(r.start_ts_ns) < narrow_ns;
    if (narrow && last_narrow && !out->empty() && out->back().lane == index &&
        double(r.start_ts_ns) - double(out->back().end_ns) < column_ns) {
      RangeBar& bar = out->back();
      bar.end_ns = std::max(bar.end_ns, r.end_ts_ns);
      bar.ranges += lane.stride;
      if (bar.name != strings.get(r.name)) bar.name.clear();
      continue;
    }
    out->push_back({r.start_ts_ns, r.end_ts_ns, index, strings.get(r.name), lane.stride, false});
    last_narrow = narrow;
  }
}

}  // namespace

RangeBarsData compute_range_bars(const RangeLanes* ranges, const StringTable& strings,
                                 int64_t t0_ns, int64_t t1_ns, size_t columns) {
  RangeBarsData out;
  if (ranges == nullptr || t1_ns < t0_ns) return out;
  // In doubles: a file's times can be anything, and their difference overflow.
  const double column_ns = (double(t1_ns) - double(t0_ns)) / double(std::max<size_t>(columns, 1));
  uint32_t lanes_used = 0;
  for (uint32_t lane = 0; lane < ranges->lanes.size(); ++lane) {
    const size_t before = out.bars.size();
    if (lane < kShownRangeLanes) {
      lane_bars(ranges->lanes[lane], lane, strings, t0_ns, t1_ns, column_ns, &out.bars);
    } else {
      const TrackSpan span = ranges_between(ranges->lanes[lane], t0_ns, t1_ns);
      if (span.last > span.first) lanes_used = lane + 1;
    }
    if (out.bars.size() > before) lanes_used = lane + 1;
  }
  for (const OpenRange& o : ranges->open) {
    if (o.lane == RangeLanes::kNoLane || o.span.start_ts_ns > t1_ns) continue;
    if (o.lane >= kShownRangeLanes) {
      lanes_used = std::max(lanes_used, o.lane + 1);
      continue;
    }
    out.bars.push_back({o.span.start_ts_ns, t1_ns, o.lane, strings.get(o.span.name), 1, true});
    lanes_used = std::max(lanes_used, o.lane + 1);
  }
  std::stable_sort(out.bars.begin(), out.bars.end(), [](const RangeBar& a, const RangeBar& b) {
    return a.lane != b.lane ? a.lane < b.lane : a.start_ns < b.start_ns;
  });
  out.lanes = std::min(lanes_used, kShownRangeLanes);
  out.deeper_lanes = lanes_used - out.lanes;
  out.too_deep = too_deep_between(*ranges, t0_ns, t1_ns);
  return out;
}

std::vector<const RangeBar*> range_bars_at(const RangeBarsData& data, int64_t t_ns) {
  std::vector<const RangeBar*> out;
  for (const RangeBar& b : data.bars) {
    if (b.start_ns <= t_ns && t_ns <= b.end_ns) out.push_back(&b);
  }
  return out;
}

}  // namespace memtap::viewdata
