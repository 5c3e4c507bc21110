// Each process's ranges (memtap.range(), MSTX Range_start / Range_end) over time, for the
// window to draw as bars under its curves. A range goes in the lowest lane no open range
// holds, so nested ranges stack (lane 0 the outermost) and ranges that overlap without
// nesting (two threads, an end out of order) never share a lane: a lane's ranges are
// disjoint, in time order. An end closes the latest open range of its name, as the report's
// scopes do (blocks/block_analyzer.cpp).
//
// Bounded: at most kMaxLanes lanes (deeper ranges are not drawn: only their times are kept,
// to say how many a span has), kMaxOpen ranges open at once, and each lane thins past its
// cap as steps do (thinned_track.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "monitor/engine/thinned_track.h"

namespace memtap {

struct RangeSpan {
  int64_t start_ts_ns = 0;
  int64_t end_ts_ns = 0;
  uint32_t name = 0;  // StringTable id
};

using RangeLane = ThinnedTrack<RangeSpan>;

struct OpenRange {
  RangeSpan span;  // end_ts_ns unused
  uint32_t lane = 0;
};

struct RangeLanes {
  static constexpr uint32_t kMaxLanes = 8;  // 12 MiB a process at most
  static constexpr size_t kMaxOpen = 256;
  static constexpr uint32_t kNoLane = UINT32_MAX;  // begun with every lane taken

  std::vector<RangeLane> lanes;  // closed ranges; lane 0 the outermost
  std::vector<OpenRange> open;   // still under way, in the order they began
  uint64_t too_deep = 0;         // ranges begun with every lane taken: not drawn
  uint64_t unmatched_ends = 0;   // ends with no open range of their name
  // Those too deep that ended (and those past kMaxOpen, as an instant), by start: only to
  // count them over a span. Their longest bounds how far before a span one can begin.
  RangeLane too_deep_spans;
  int64_t too_deep_longest_ns = 0;
};

// `kept_per_lane`: a lane's cap before it thins.
void range_started(RangeLanes& ranges, int64_t ts_ns, uint32_t name, size_t kept_per_lane);
void range_ended(RangeLanes& ranges, int64_t ts_ns, uint32_t name, size_t kept_per_lane);

// The closed ranges of `lane` that overlap [t0_ns, t1_ns].
TrackSpan ranges_between(const RangeLane& lane, int64_t t0_ns, int64_t t1_ns);

// How many of the ranges too deep for a lane overlap [t0_ns, t1_ns], those still open
// included: about, where too_deep_spans thinned.
uint64_t too_deep_between(const RangeLanes& ranges, int64_t t0_ns, int64_t t1_ns);

}  // namespace memtap
