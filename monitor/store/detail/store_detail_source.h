// Older detail of a curve, read back from the recording on demand: the store behind
// Timeline::set_detail_source (docs/design-notes.md, monitor/engine/timeline "Curves for long
// sessions").
//
// The timeline keeps only a window of each series' newest points at full resolution;
// anything older is a min/max pyramid. When a chart zooms into a past the window has
// forgotten, this source answers with the exact points the series had there: it reads the
// process's events up to t1 from the recording (memtap's or msMemScope's SQLite file, or
// a CSV export), replays them through a fresh Timeline of the same configuration, and
// hands back the series' points in [t0, t1] with the one in force at t0. Those are the
// points the live series held, since a series depends only on its own process and
// device's events up to that moment, in time order. One exception looks ahead: a device's
// Allocated is rewritten to 0 when its first framework block comes (timeline_ingest.cpp,
// restart_allocated), so for Allocated and Fragmentation of a device that has not seen one
// by t1 the replay reads on until it has, or until the rewrite can no longer happen
// (Reserved's window has dropped a point), whichever comes first.
//
// It works on a recording still being written: memtap's writer commits to
// `<path>.partial` in WAL mode, and a read-only connection sees every committed row.
// Given the final path, the source reads `<path>.partial` while that is all there is.
//
// Cost: one replay of the process's events up to t1 per query (and nothing kept between
// queries). The replay Timeline is bounded like the live one (TimelineConfig), the points
// are copied out of its window as they come, and the answer holds at most max_points, so
// the memory is that of one scope's series plus the answer, whatever the file's length.
// Measured (best of 2-3 runs, on a 2-core AMD EPYC container shared with other builds,
// so the figures are high; RelWithDebInfo, the file in the page cache) on a finished
// memtap recording of 1,000,000 heap MALLOC/FREE events of one process (each changes
// Allocated), window 1,024 points, 1,000 points asked for, ending at:
//   event 1,000         0.001 s
//   event 501,000       0.9 s
//   event 1,000,000     1.6 s   about 0.6 M events/s: SQLite walking the timestamp index
//                               and the row decoding are nearly all of it
// The same file without its timestamp index, as a live `.partial` is (SQLite scans the
// table and sorts the rows up to t1): 0.2 s, 1.8 s, 2.9 s. A file whose rows also carry
// ~900 bytes of Python and C stacks (1.4 GB): 4-5 s at the end; the stacks are not read
// (RecordingFilter::skip_names_and_stacks), which takes about 30% off.
// These figures come from (the first two groups; the stacked file was measured apart):
//   MEMTAP_DETAIL_COST_EVENTS=1000000 build/tests/store_detail_test --gtest_filter='*QueryCost'
//
// That is acceptable: such a query is rare and asked for by the user, a zoom into the
// past in the GUI, not the refresh of a live chart (recent ranges come from the window and
// never get here); and bounded memory matters more, since keeping every point would make
// a long session's memory grow without bound. One caller to mind: Timeline::time_to_oom
// asks points() for a fraction of the session's span of App Reserved, which on a long,
// busy session reaches past the window, so with this source set such a forecast is a
// replay too. Cheaper queries would need checkpoints (a scope's state every N events) to
// start the replay from, which the timeline cannot export today.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "monitor/engine/timeline/timeline.h"

namespace memtap {

// The owner label (the text, levels joined by '@') that the live timeline's owner group
// value stands for: GroupBy::kOwner groups are ids in the live StringTable, which mean
// nothing in the replay's. "" when unknown.
using OwnerLabelFn = std::function<std::string(uint64_t owner)>;

struct StoreDetailOptions {
  // The live timeline's configuration: the replay must drop points and overflow owners
  // and streams into one series exactly as the live one did.
  timeline::TimelineConfig config;
  // Needed for Group By Owner series other than "no owner" and the overflow group;
  // without it those are left to the pyramid.
  OwnerLabelFn owner_label;
  // A range holding more points than this is left to the pyramid (64 MiB of points by
  // default): far more than any chart shows, so the envelope says as much.
  size_t max_points = size_t(1) << 22;
  size_t batch_events = size_t(1) << 14;  // events per read from the recording
};

// The points of `key`'s series in [t0_ns, t1_ns] and the one in force at t0 (as
// Series::query returns them from its window), replayed from the recording at `path`.
// False with *error (one line, naming the file) when the file cannot be read, the series
// has no point at or before t1 in it, or the range holds more than options.max_points.
bool read_series_detail(const std::string& path, const timeline::SeriesKey& key, int64_t t0_ns,
                        int64_t t1_ns, const StoreDetailOptions& options,
                        std::vector<timeline::CurvePoint>* out, std::string* error);

// A stretch of time whose points read_series_spans returns: the one in force at t0_ns,
// then those in (t0_ns, t1_ns].
struct SeriesSpan {
  int64_t t0_ns = 0;
  int64_t t1_ns = 0;
};

// Spans of one series, in time order and not overlapping.
struct SeriesSpans {
  timeline::SeriesKey key;
  std::vector<SeriesSpan> spans;
  size_t max_points = 0;  // 0: options.max_points
};

struct SpansAnswer {
  bool ok = false;
  std::string error;                                      // when not ok: one line, naming the file
  std::vector<std::vector<timeline::CurvePoint>> points;  // each span's
};

// read_series_detail for several series of one process and device, several spans each, in
// one replay (up to the last span's end): the chart asks this way for the points behind its
// envelopes' widest buckets, a few hundred points each, for its lines and its overview.
// (*answers)[r] answers requests[r]: not ok as read_series_detail would fail (its last span
// empty; more than its max_points in its spans together), and a span with no point at
// or before its end is empty. False with *error only when the file cannot be read or the
// requests are malformed.
bool read_series_spans(const std::string& path, const std::vector<SeriesSpans>& requests,
                       const StoreDetailOptions& options, std::vector<SpansAnswer>* answers,
                       std::string* error);

// read_series_detail as a Timeline::DetailSource for the recording at `recording_path`
// (or `<recording_path>.partial` while the run is writing it). Never throws: any failure,
// memory included, is a false, and the timeline's pyramid answers.
timeline::DetailSource make_store_detail_source(std::string recording_path,
                                                StoreDetailOptions options = {});

}  // namespace memtap
