// Each process's training steps (SYSTEM STEP), marks (MSTX Mark) and ranges (MSTX
// Range_start / Range_end, in lanes: range_lanes.h) over time, for the window to draw on its
// time axis and to say which step an instant falls in. Bounded
// memory whatever the session's length: a process keeps at most kKeptPerKind steps and as
// many marks; past that, only every second one of what it kept stays, then every fourth,
// and so on (`stride`), so a long run is still covered from end to end, only thinner.
//
// Events in time order per process, as the analyzer gets them; an older one is put in
// its place (a recording's rows are already in order; a live session's nearly so).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "monitor/engine/range_lanes.h"
#include "monitor/engine/thinned_track.h"
#include "monitor/model/mem_event.h"

namespace memtap {

struct StepMark {
  int64_t ts_ns = 0;
  // A step: its number (the STEP row's Name, or its count when the Name is not a number).
  // A mark: its count in the process (1-based).
  uint64_t number = 0;
  uint32_t name = 0;  // a mark's text (StringTable id); 0 for a step
};

// What one process has kept of one kind: every `stride`-th by count, in time order.
using StepMarkTrack = ThinnedTrack<StepMark>;

class StepMarks {
 public:
  // 65,536 of a kind: 1.5 MiB a kind and process at most (16 ranks: 48 MiB), and every step
  // of all but the longest runs.
  static constexpr size_t kKeptPerKind = size_t(1) << 16;

  // `strings` holds the events' ids and outlives this.
  explicit StepMarks(const StringTable* strings, size_t kept_per_kind = kKeptPerKind);

  // A kStep, kMark, kRangeStart or kRangeEnd event; others are ignored.
  void add(const MemEvent& e);

  // nullptr when the process had none of the kind.
  const StepMarkTrack* steps(uint32_t pid) const;
  const StepMarkTrack* marks(uint32_t pid) const;
  const RangeLanes* ranges(uint32_t pid) const;

 private:
  struct Process {
    StepMarkTrack steps;
    StepMarkTrack marks;
    RangeLanes ranges;
  };
  void keep(StepMarkTrack& track, const StepMark& m) const;

  const StringTable* strings_;
  size_t kept_per_kind_;
  std::map<uint32_t, Process> by_pid_;
};

// The entries of `track` with ts_ns in [t0_ns, t1_ns], as indexes [first, last).
using StepMarkSpan = TrackSpan;
StepMarkSpan step_marks_between(const StepMarkTrack& track, int64_t t0_ns, int64_t t1_ns);

// The last entry at or before t_ns (the step under way then), or nullptr when none began yet.
const StepMark* step_mark_at(const StepMarkTrack& track, int64_t t_ns);

}  // namespace memtap
