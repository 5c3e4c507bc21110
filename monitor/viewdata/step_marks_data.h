// What the curves draw on their time axis over a range: the process's training steps
// (memtap.step(), SYSTEM STEP), its marks (memtap.mark(), MSTX Mark), its ranges
// (memtap.range(), as bars: range_bars_data.h) and the device's out-of-memory failures
// (OOM_DETAIL), from the engine's StepMarks and OOM log. Lines are
// kept some columns apart wherever they would crowd: the steps by a round stride (every
// 5th, 10th, ...) while every step is known, the marks by leaving out those too close to
// the one before. The hover still names the step under way wherever every step is there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "monitor/viewdata/data_source.h"
#include "monitor/viewdata/range_bars_data.h"

namespace memtap::viewdata {

struct TimeMark {
  int64_t ts_ns = 0;
  uint64_t number = 0;  // a step's number; a mark's count in the process
  std::string text;     // a mark's text; an OOM's "cudaMalloc asked 2.0 GiB"; "" for a step
  // A step's: the most Allocated held while it ran (so far, the step under way), from the
  // engine's step figures: the process's first blocks::kKeptStepFigures steps and its
  // latest blocks::kRecentStepFigures. kUnknown elsewhere.
  int64_t peak_bytes = kUnknown;
};

struct StepMarksData {
  // Steps that began in the range, in time order: every one while there are at most
  // kListedStepsPerColumn a column (so the hover can name the step under way anywhere),
  // else only those at least kStepSpacingColumns apart (`every_step` false).
  std::vector<TimeMark> steps;
  bool every_step = true;
  // With every_step, the chart draws the steps whose number is a multiple of this: the
  // smallest of 1, 2, 5, 10, ... that keeps them kStepSpacingColumns apart everywhere in the
  // range (steps that crowd in one stretch thin the lines across all of it, so that their
  // numbers stay round). Without, it draws them all.
  uint64_t step_stride = 1;
  // No step of `steps` is on the stride (steps 2-4 crowded, every 5th): the first is drawn.
  bool first_alone = false;
  TimeMark step_before;         // the step under way as the range begins; number 0: none had begun
  TimeMark step_after;          // the first step to begin after the range; number 0: none yet
  uint64_t steps_in_range = 0;  // about, once the engine thinned them
  std::vector<TimeMark> marks;  // in time order, each kMarkSpacingColumns after the last
  uint64_t marks_in_range = 0;
  std::vector<TimeMark> ooms;  // of the device, in the range (the first the engine kept)
  RangeBarsData ranges;        // the process's ranges over the span (range_bars_data.h)
};

constexpr size_t kStepSpacingColumns = 8;
constexpr size_t kListedStepsPerColumn = 4;
constexpr size_t kMarkSpacingColumns = 6;

// On the engine's thread.
StepMarksData compute_step_marks(const EngineView& engine, uint32_t pid, int32_t device,
                                 int64_t t0_ns, int64_t t1_ns, size_t columns);

// The smallest of 1, 2, 5, 10, 20, 50, ... that is at least n.
uint64_t round_at_least(uint64_t n);

// The step under way at t_ns in the range (number 0: none had begun); nullptr when the
// steps were thinned (every_step false).
const TimeMark* step_at(const StepMarksData& data, int64_t t_ns);
// Where the steps were thinned (every_step false), the steps listed on either side of t_ns:
// the latest to begin by it and the first after it (number 0: none known), for a hover
// that cannot name the step under way: "between steps 480 and 560". Into `data`.
struct StepsAround {
  const TimeMark* before;
  const TimeMark* after;
};
StepsAround steps_around(const StepMarksData& data, int64_t t_ns);
// When the step under way at t_ns began, and when the next began (or `range_end_ns`, where
// no later step is known yet): what a double-click on the curves selects. False where no
// step is under way, or the steps were thinned.
bool step_span_at(const StepMarksData& data, int64_t t_ns, int64_t range_end_ns, int64_t* begin_ns,
                  int64_t* end_ns);
// Whether the chart draws `step`, one of data.steps (step_stride, first_alone).
bool step_drawn(const StepMarksData& data, const TimeMark& step);

}  // namespace memtap::viewdata
