// The ranges (memtap.range(), MSTX Range_start / Range_end) the curves draw as bars under
// their lines over a time span: a row per lane (range_lanes.h; the outermost at the bottom),
// at most kShownRangeLanes of them. Ranges too narrow to tell apart that follow each other
// in a lane are one bar that says how many it stands for: zoom in to see them one by one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "monitor/engine/range_lanes.h"
#include "monitor/model/mem_event.h"

namespace memtap::viewdata {

struct RangeBar {
  int64_t start_ns = 0;
  int64_t end_ns = 0;   // a range still open: the span's end
  uint32_t lane = 0;    // 0: the outermost
  std::string name;     // the range's; for a bar of several, theirs if they share it, else ""
  uint64_t ranges = 1;  // how many ranges the bar stands for (about, where the engine thinned)
  bool open = false;    // still under way
};

struct RangeBarsData {
  std::vector<RangeBar> bars;  // by lane, then by time
  uint32_t lanes = 0;          // lanes with a bar, kShownRangeLanes at most
  uint32_t deeper_lanes = 0;   // lanes of ranges nested deeper, with ranges in the span: not drawn
  uint64_t too_deep = 0;       // ranges in the span nested past RangeLanes::kMaxLanes: not kept
};

constexpr uint32_t kShownRangeLanes = 3;
// Ranges narrower than this, closer than a column to the one before, join it in one bar.
constexpr double kMinRangeBarColumns = 3;

// `ranges` may be null (the process has none). On the engine's thread.
RangeBarsData compute_range_bars(const RangeLanes* ranges, const StringTable& strings,
                                 int64_t t0_ns, int64_t t1_ns, size_t columns);

// The bars under t_ns, outermost first.
std::vector<const RangeBar*> range_bars_at(const RangeBarsData& data, int64_t t_ns);

}  // namespace memtap::viewdata
