// The memory curves of one process on one device, as the window draws them: the engine's
// series for a time range, at about as many points as the chart has pixels (its LTTB sample
// or min/max envelope, timeline/series.h), every point when the range holds few enough,
// and the same series over the whole session for the trend overview.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "monitor/engine/timeline/timeline.h"
#include "monitor/viewdata/data_source.h"
#include "monitor/viewdata/step_marks_data.h"

namespace memtap::viewdata {

struct CurvesRequest {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  timeline::GroupBy group_by = timeline::GroupBy::kOverall;
  bool fragmentation = false;  // Overall: add the Fragmentation curve (Reserved - Allocated)
  int64_t t0_ns = 0;           // the range shown; t1 <= t0: the whole session
  int64_t t1_ns = 0;
  size_t max_points = 2000;       // about the chart's width in pixels
  size_t overview_points = 1000;  // the overview's width; 0: no overview
  size_t max_groups = 8;          // Group By: the largest groups drawn, the rest summed
};

// One drawn series. A step function: each value holds until the next point's time.
// Where the range begins before the engine's full-resolution window, its older part is an
// envelope (min, max and last value per bucket of points) and the part the window holds
// follows as points; `envelope` then ends before the first of `points`.
struct CurveLine {
  std::string name;  // "Allocated", ..., or the group's label ("(no owner)", "HOST", "stream 7")
  timeline::Resolution resolution = timeline::Resolution::kFull;  // kEnvelope: some of it is
  std::vector<timeline::EnvelopeBucket> envelope;                 // the older part, if any
  std::vector<timeline::CurvePoint> points;                       // the newer part
  int64_t peak_bytes = 0;     // the series' greatest value in the range
  uint64_t total_points = 0;  // points the series has in all
  timeline::SeriesKey key;    // the engine's series (refine_curves); pid 0: a sum of several
  bool from_store = false;    // its older part was read back from the recording: every point
  // About how many points the envelope stands for (the series' density before the window
  // times the envelope's span): refine_curves is worth it only when they are few.
  uint64_t envelope_points = 0;
};

struct CurvesData {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  timeline::GroupBy group_by = timeline::GroupBy::kOverall;
  int64_t session_first_ns = 0;  // the scope's first and newest event (0, 0: none yet)
  int64_t session_last_ns = 0;
  int64_t t0_ns = 0;  // the range the lines cover
  int64_t t1_ns = 0;
  size_t columns = 0;                 // the request's max_points: about a pixel column each
  uint64_t scope_events = 0;          // the scope's events in all (ScopeSummary::events)
  std::vector<CurveLine> lines;       // Overall: Allocated, Reserved, Active, App Reserved (+ F.)
  size_t hidden_groups = 0;           // Group By: groups beyond max_groups, summed in "other"
  std::vector<CurveLine> overview;    // whole session: Allocated and Reserved
  size_t overview_columns = 0;        // the request's overview_points
  int64_t capacity_bytes = kUnknown;  // what the device has (host: MemTotal or the cgroup)
  // A framework layer (PTA, PTA_WORKSPACE, ATB, MINDSPORE) has blocks in this scope, or its
  // pool's figures were sampled (pool SNAPSHOTs): its pool is what Allocated and Reserved
  // count (curve_rules.h). On a GPU without one, all four curves count the driver's (HAL)
  // memory and are the same line.
  bool framework_pool = false;
  // The process's steps and marks, and the device's OOMs, over the range (step_marks_data.h).
  StepMarksData step_marks;
};

// On the engine's thread. A scope with no events gives empty lines.
CurvesData compute_curves(const EngineView& engine, const CurvesRequest& request);

// An envelope bucket this many columns wide or more is a quiet stretch (buckets count
// points): the chart draws it as its steps (first point, extremes, last point), and
// refine_curves reads its points back from the recording.
constexpr int64_t kWideBucketColumns = 4;
bool is_wide_bucket(int64_t t0_ns, int64_t t1_ns, size_t columns,
                    const timeline::EnvelopeBucket& b);

// Whether some line's older part is only an envelope (the engine's window no longer holds
// it) standing for at most `max_points` points, or some line or overview line has wide
// buckets: zoomed in that far, refine_curves reads every point back from the recording;
// zoomed out, the points of the wide buckets. A wider range stays an envelope: its points would not
// fit the pixels anyway, and reading them back costs a replay of the file.
constexpr uint64_t kDetailPoints = 32768;
bool needs_detail(const CurvesData& data, uint64_t max_points = kDetailPoints);

// `data` with every envelope part replaced by the exact points, read back from the recording
// at `recording_path` (store/detail/store_detail_source.h: the process's events up to the
// range's end replayed; about a second per million events, so this runs on the store's
// thread, never the engine's), sampled to `max_points` a line. A line whose envelope stands
// for more than `max_envelope_points` keeps it, but its wide buckets are replaced by their
// points (at most kWideBucketPoints in all, else they stay), and so are the overview's. One
// replay serves them all. The wide buckets alone start no replay that would read more
// than about `max_wide_events` events (the scope's events spread evenly over its time, up
// to the last wide bucket's end: 2-4 s on the VM), since the store's thread answers the
// event table and the flame chart in turn: a larger recording shows their steps until a
// zoom. A line whose points cannot be read (the file gone) keeps its envelope.
constexpr size_t kWideBucketPoints = size_t(1) << 20;
constexpr uint64_t kWideBucketEvents = 4'000'000;
CurvesData refine_curves(const std::string& recording_path, CurvesData data, size_t max_points,
                         uint64_t max_envelope_points = kDetailPoints,
                         uint64_t max_wide_events = kWideBucketEvents);

// Lines with the same points (and envelope) over the range, which the chart draws one over
// the other so that only the last shows: groups of two or more indexes into data.lines, in
// their order, each group in order of its first line. Active beside Allocated alone is not
// a group: Active equals Allocated wherever no framework block's free was pending on
// another stream (the host always, most devices most of the time: curve_rules.h), and the
// chart draws it dashed over Allocated so that both show; it is in a group with any other
// line. Where a free was pending in the range the two differ, and each is its own line.
std::vector<std::vector<size_t>> identical_lines(const CurvesData& data);

// Whether the Overall lines' Active differs from their Allocated over the range: a
// framework block's free was pending on another stream in it (curve_rules.h).
bool active_apart(const CurvesData& data);

// The value each line has at `t_ns` (the point in force then), in lines' order; for an
// envelope, the last value of the bucket in force. For the chart's hover.
std::vector<int64_t> values_at(const CurvesData& data, int64_t t_ns);

// What Allocated did over the training step under way at t_ns: its value as the step began
// and as the next began (what the step left live, or freed). Only for the Overall lines, and
// a step that begins and ends inside the range drawn: elsewhere the lines do not hold both
// ends. For the chart's hover.
struct StepChange {
  int64_t start_bytes = 0;
  int64_t end_bytes = 0;
};
std::optional<StepChange> allocated_over_step(const CurvesData& data, int64_t t_ns);
// The same over [begin_ns, end_ns] (a range's bar): the Allocated line as it begins and as
// it ends; only for the Overall lines and a span inside the range drawn.
std::optional<StepChange> allocated_between(const CurvesData& data, int64_t begin_ns,
                                            int64_t end_ns);

// The processes and devices the engine has curves for, and the groups a Group By offers:
// for the top bar's selectors.
struct ScopeEntry {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
};
std::vector<ScopeEntry> list_scopes(const EngineView& engine);

}  // namespace memtap::viewdata
