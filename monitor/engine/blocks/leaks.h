// Leak suspects of one account.
//
// With SYSTEM STEP events: the live bytes of every owner and every stack are recorded at
// each step boundary (only the last window_steps + 1 of them, so memory is keys x window,
// whatever the number of steps); a key is a suspect when its live bytes grew over at least
// min_growth_fraction of the last window_steps complete steps, or never fell over them and
// grew every few steps (in at least min_periodic_growth_fraction of them, and still: fewer
// steps since the last rise than the longest wait for one), and their least-squares slope
// is above min_bytes_per_step.
// Without steps (or too few): the blocks alive now grouped by stack, owner and name, and
// the trend of total live bytes over time. Both are always filled; step_based says which
// one a report should lead with.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "monitor/engine/blocks/basis.h"
#include "monitor/engine/blocks/block_table.h"
#include "monitor/engine/blocks/keys.h"
#include "monitor/engine/blocks/peak.h"

namespace memtap::blocks {

struct LeakOptions {
  size_t window_steps = 10;          // K: the last K complete steps are judged
  double min_growth_fraction = 0.8;  // grew in at least this share of them
  // ... or, a leak that grows every few steps (a record kept every third step, a cache filled
  // at each evaluation): never fell, grew in at least this share of them, and has waited
  // less since its last rise than it ever waited for one (a warm-up that grew and stopped
  // has not).
  double min_periodic_growth_fraction = 0.25;
  size_t min_steps = 3;           // fewer complete steps: no step verdict
  double min_bytes_per_step = 0;  // the slope must be above this
  // ... and the growth over the judged steps must be at least this share of what the key
  // holds at the last step: a key holding 66 MiB that grows 304 B a step is churn, not a
  // leak, while a small leak grows by about what it holds.
  double min_growth_of_live = 0.01;
};

// One step's live bytes (the account's total): when it began, the most while it ran, and
// when the next began (the last step: now). What `memtap diff` lines up step by step.
struct StepFigures {
  uint64_t step = 0;  // 1-based, as the process's STEP markers count
  int64_t start_ns = kNoTime;
  uint64_t start_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t end_bytes = 0;
};

// Steps whose figures are kept: the first of a run (the ones two runs share), so that
// memory stays bounded whatever the number of steps ...
constexpr size_t kKeptStepFigures = 1000;
// ... and, past those, the latest (the ones a user watching a long run hovers over).
constexpr size_t kRecentStepFigures = 1000;

// Per-key live bytes at the last K+1 step boundaries. Step s begins at the s-th STEP event
// of the process (boundary s, 1-based); step s is complete once boundary s+1 is seen. A
// device first seen after some steps records from the next boundary on.
struct StepHistory {
  size_t window = 10;
  uint64_t recorded = 0;   // boundaries recorded here (consecutive steps)
  uint64_t last_step = 0;  // the step of the last one
  int64_t last_boundary_ts_ns = kNoTime;
  // Only owners and stacks: [0] owners, [1] stacks; ring[d][key * (window+1) + b % (window+1)]
  std::array<std::vector<int64_t>, 2> ring;
  // The lowest value a key had at a boundary and the last boundary where it had it: the
  // key's growth started in that step.
  std::array<std::vector<int64_t>, 2> min_bytes;
  std::array<std::vector<uint64_t>, 2> min_boundary;
  std::array<std::vector<int64_t>, 2> min_boundary_ts_ns;  // ... and its time (the window's
                                                           // findings move the cursor there)
  // Finished steps (the first kKeptStepFigures), and the one under way since the last
  // boundary (its peak and end are filled when it finishes or is asked for).
  std::vector<StepFigures> figures;
  StepFigures current;
  // Finished steps past those: the latest kRecentStepFigures, a ring (oldest at recent_next
  // once full).
  std::vector<StepFigures> recent;
  size_t recent_next = 0;
  // Live bytes per (owner, stack) pair at the last boundary: the stacks a leaking owner's
  // bytes were in there (a leak is often freed at the end, by then nothing is live).
  std::vector<KeyBytes> pairs_at_last_step;
};

// Step `step` of the process begins now. `live.step_peak_bytes` is the most the step that
// ends here held; the caller resets it to the live bytes afterwards.
void record_step_boundary(StepHistory& h, const LiveByKey& live, uint64_t step, int64_t ts_ns);
// The step under way, its peak and end so far (now); none before the first boundary.
std::optional<StepFigures> step_under_way(const StepHistory& h, const LiveByKey& live);
// The same, for the report's list of the first steps: none once kKeptStepFigures are kept.
std::optional<StepFigures> current_step_figures(const StepHistory& h, const LiveByKey& live);
// The kept steps (the first and the latest) and the one under way that began in [t0_ns,
// t1_ns], after the one under way as t0_ns came, in time order: what the window's hover
// says of a step's peak.
std::vector<StepFigures> step_figures_between(const StepHistory& h, const LiveByKey& live,
                                              int64_t t0_ns, int64_t t1_ns);

// Least-squares line through live bytes over time, live bytes taken as the step function
// they are (each value weighted by how long it held), so a burst of events does not
// outweigh a long quiet stretch. Times are seconds since the first change.
struct LiveTrend {
  int64_t t0_ns = kNoTime;
  int64_t last_ts_ns = 0;
  double last_value = 0;
  double s0 = 0, s1 = 0, s2 = 0, sy = 0, sty = 0;  // integrals of 1, t, t^2, y, t*y
};

// Live bytes became `value` at ts_ns.
void trend_update(LiveTrend& t, int64_t ts_ns, double value);
// Bytes per second, the current value held until now_ns; 0 when undefined.
double trend_slope(LiveTrend t, int64_t now_ns);

struct LeakSuspect {
  KeyLabel key;
  double bytes_per_step = 0;          // least-squares slope over the judged boundaries
  uint64_t steps_judged = 0;          // complete steps in the window
  uint64_t steps_grown = 0;           // of which live bytes grew
  uint64_t growth_start_step = 0;     // the step in which the growth began
  int64_t growth_start_ns = kNoTime;  // when that step began (its boundary)
  int64_t first_bytes = 0;            // live bytes at the window's first boundary
  int64_t last_bytes = 0;             // ... and at its last
  std::vector<PeakEntry> stacks{};    // an owner's: the stacks holding most of it at the last step
};

struct AliveGroup {
  KeyLabel key;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  std::vector<PeakEntry> stacks{};  // an owner's: the stacks holding most of it
};

struct LeakResult {
  uint32_t pid = 0;
  int32_t device = kNoDevice;
  Basis basis = Basis::kHostHeap;
  uint64_t steps = 0;              // step boundaries recorded for this device
  bool step_based = false;         // at least min_steps complete steps: lead with the suspects
  int64_t last_step_ns = kNoTime;  // the last step boundary (the suspects' last_bytes are there)
  std::vector<LeakSuspect> owner_suspects;  // most bytes per step first
  std::vector<LeakSuspect> stack_suspects;
  // Blocks alive now, most bytes first (top_n each), and their totals.
  uint64_t alive_bytes = 0;
  uint64_t alive_blocks = 0;
  std::vector<AliveGroup> alive_by_stack;
  std::vector<AliveGroup> alive_by_owner;
  std::vector<AliveGroup> alive_by_name;
  double trend_bytes_per_s = 0;  // slope of total live bytes over the whole run
  int64_t trend_span_ns = 0;     // the time it covers
  // Each step's live bytes (StepFigures; the step under way ends now), and the
  // least-squares slope of live bytes at the step boundaries: how much a step leaves
  // behind. 0 with fewer than 3 boundaries.
  std::vector<StepFigures> step_figures;
  double live_bytes_per_step = 0;
};

LeakResult leak_result(const StepHistory& h, const LiveByKey& live, const LiveTrend& trend,
                       const KeyIndex& keys, const StringTable& strings, const LeakOptions& o,
                       size_t top_n, int64_t now_ns);

}  // namespace memtap::blocks
