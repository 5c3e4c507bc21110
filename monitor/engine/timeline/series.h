// One curve (a step function of time: each point's value holds until the next point) kept
// in bounded memory: the newest points at full resolution (PointWindow) and all of history
// at bucket resolution (MinMaxPyramid), with the queries a chart needs.
//
// Memory per series, whatever the session's length: at most bound_bytes(limits) =
// window_points * 16 + levels * (level_buckets * 64 + 120) + sizeof(Series) (112) bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "monitor/engine/timeline/minmax_pyramid.h"
#include "monitor/engine/timeline/point_window.h"

namespace memtap::timeline {

struct SeriesLimits {
  uint32_t window_points = 1u << 18;  // full-resolution points kept (>= the base bucket)
  PyramidLimits pyramid;
};

enum class Resolution : uint8_t {
  kFull,      // every point in the range
  kLttb,      // Largest-Triangle-Three-Buckets sample of the points in the range
  kEnvelope,  // the range is older than the full-resolution window: min/max buckets
};

// The answer to a range query. Points (kFull, kLttb) start with the point in force at t0,
// which may be older than t0; buckets (kEnvelope) likewise start with the bucket holding
// that point. Either way the chart can draw from t0 without a gap.
struct CurveQuery {
  Resolution resolution = Resolution::kFull;
  bool from_detail_source = false;  // full-resolution points came from outside (the store)
  std::vector<CurvePoint> points;
  std::vector<EnvelopeBucket> envelope;
};

// Whether an envelope splits its widest buckets into finer ones (for drawing: a bucket's band
// should not claim a min or max over more time than it had it), or keeps the buckets of one
// level (for sampling evenly in time: each sample reads a bucket's last value, late by up to
// a bucket, and a mix of widths would be late by different amounts along the range).
enum class WideBuckets : uint8_t { kSplit, kKeep };

class Series {
 public:
  explicit Series(const SeriesLimits& limits);

  // Hot path: a new value from ts_ns on. Times must not decrease.
  void append(int64_t ts_ns, int64_t value_bytes) {
    window_.push(ts_ns, value_bytes);
    pyramid_.add(ts_ns, value_bytes);
    if (pyramid_.points() == 1) {
      first_ts_ns_ = ts_ns;
      peak_ = {ts_ns, value_bytes};
    } else if (value_bytes > peak_.value_bytes) {
      peak_ = {ts_ns, value_bytes};
    }
    value_ = value_bytes;
  }

  bool empty() const { return pyramid_.points() == 0; }
  uint64_t points() const { return pyramid_.points(); }
  int64_t value() const { return value_; }  // the newest value (0 when empty)
  int64_t first_ts_ns() const { return first_ts_ns_; }
  // The first moment the greatest value was reached.
  CurvePoint peak() const { return peak_; }

  // Whether the full-resolution window still holds the point in force at t0.
  bool window_covers(int64_t t0_ns) const;

  // Points of [t0, t1] when the window covers t0 (all of them up to max_points, else an
  // LTTB sample of max_points), otherwise envelope(t0, t1, max_points).
  CurveQuery query(int64_t t0_ns, int64_t t1_ns, size_t max_points,
                   WideBuckets wide = WideBuckets::kSplit) const;

  // At most max_points buckets covering [t0, t1] from the pyramid, whatever the window
  // holds: for each stretch of history the level fine enough to fit max_points, then finer
  // levels and finally the window's points for the newest stretch the coarse level has not
  // closed yet. Where that still gives too many, neighbours in the same 1/max_points of
  // [t0, t1] merge. Consecutive buckets cover consecutive points, none skipped: a spike
  // anywhere in the range is in some bucket's max. Buckets count points, not time, so where
  // the curve was quiet one bucket can span many 1/max_points of the range; such a bucket
  // is replaced by its children from the level below, as far down as the levels still hold
  // them, so that its band does not claim a min or max over time it did not have there.
  // `wide` kKeep leaves every bucket at the level chosen (time_to_oom: see WideBuckets).
  std::vector<EnvelopeBucket> envelope(int64_t t0_ns, int64_t t1_ns, size_t max_points,
                                       WideBuckets wide = WideBuckets::kSplit) const;

  const PointWindow& window() const { return window_; }
  const MinMaxPyramid& pyramid() const { return pyramid_; }

  size_t memory_bytes() const;
  static size_t bound_bytes(const SeriesLimits& limits);

 private:
  // A bucket of the envelope and where it came from: its pyramid level and number, or
  // kNotSplit for a window point or an open bucket (nothing finer to split it into).
  struct HeldBucket {
    static constexpr int kNotSplit = -1;
    EnvelopeBucket bucket;
    int level = kNotSplit;
    uint64_t number = 0;
  };
  void collect_envelope(int64_t t0_ns, int64_t t1_ns, size_t max_points,
                        std::vector<HeldBucket>& out) const;
  // Splits buckets wider than `max_span_ns` (up to the next bucket's start) into their
  // children while the level below holds them.
  std::vector<HeldBucket> split_wide(std::vector<HeldBucket> in, int64_t t1_ns,
                                     int64_t max_span_ns) const;

  PointWindow window_;
  MinMaxPyramid pyramid_;
  int64_t value_ = 0;
  int64_t first_ts_ns_ = 0;
  CurvePoint peak_;
};

// kFull with the points when they are at most max_points, else kLttb with at most
// max_points of them (lttb_by_time: the first and last kept, then one a 1/max_points of the
// time they span, where there are any).
CurveQuery downsample_points(std::vector<CurvePoint> points, size_t max_points);

// The value in force at each of `count` evenly spaced times from t0 to t1 (both included),
// read from a query's points or, for an envelope, from the last value of the bucket in
// force (exact at bucket edges, at most one bucket late inside one). Before the first
// point: the first point's value.
std::vector<double> sample_step(const CurveQuery& query, int64_t t0_ns, int64_t t1_ns,
                                size_t count);

}  // namespace memtap::timeline
