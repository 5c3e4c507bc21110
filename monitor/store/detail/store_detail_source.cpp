// Older detail of a curve, replayed from the recording (see store_detail_source.h).
#include "monitor/store/detail/store_detail_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <span>
#include <utility>

#include "monitor/engine/timeline/curve_rules.h"
#include "monitor/store/reader/recording_reader.h"

namespace memtap {
namespace {

using timeline::CurvePoint;
using timeline::GroupBy;
using timeline::Series;
using timeline::SeriesId;
using timeline::SeriesKey;
using timeline::Timeline;

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// The scope (process and device) an event counts in, as Timeline::add decides it; false
// for the kinds the timeline ignores.
bool in_scope(const MemEvent& e, const SeriesKey& key) {
  if (e.kind != MemEventKind::kMalloc && e.kind != MemEventKind::kFree &&
      e.kind != MemEventKind::kFreeCompleted && e.kind != MemEventKind::kSnapshot)
    return false;
  return (e.device < 0 ? kHostDevice : e.device) == key.device;
}

// Whether `key` is Allocated (or Active, which is Allocated) or Fragmentation of a device:
// the series restart_allocated rewrites.
bool may_restart(const SeriesKey& key) {
  using timeline::Curve;
  return key.group_by == GroupBy::kOverall && key.device >= 0 &&
         (key.curve == Curve::kAllocated || key.curve == Curve::kActive ||
          key.curve == Curve::kFragmentation);
}

// Copies the points of one series of the replay out of its window as they come, keeping
// those a window query over [t0, t1] would return. Called after every chunk of at most
// the window's capacity in events (an event adds at most one point to a series), so no
// point leaves the window before it is seen.
class Harvest {
 public:
  Harvest(SeriesKey key, int64_t t0_ns, int64_t t1_ns, size_t max_points)
      : key_(key), t0_(t0_ns), t1_(t1_ns), max_points_(max_points) {}

  void set_group(uint64_t group) { key_.group = group; }

  // False when the answer would exceed max_points, or points were missed.
  bool take(const Timeline& replay) {
    const SeriesId id = replay.find(key_);
    if (id == timeline::kNoSeries) return true;
    const Series& series = replay.data(id);
    const timeline::PointWindow& window = series.window();
    if (id != id_ && id_ != timeline::kNoSeries) {
      // Active, shared with Allocated until a free was first pending, then a copy of it
      // (Timeline::split_active): the same points at the same indices, so go on from there.
      seen_ = &series;
    }
    id_ = id;
    if (&series != seen_) {
      // New, or rewritten by restart_allocated: a whole new Series, history included,
      // made while the old one still lived (so never at the old one's address).
      seen_ = &series;
      in_force_.reset();
      points_.clear();
      next_ = window.first_index();
      if (next_ != 0) return fail("the replay lost points of the series");
    }
    if (next_ < window.first_index()) return fail("the replay lost points of the series");
    for (; next_ < window.pushed(); ++next_) {
      const CurvePoint& p = window.at_index(next_);
      if (p.ts_ns <= t0_) {
        in_force_ = p;
      } else if (p.ts_ns <= t1_) {
        if (points_.size() >= max_points_) {
          return fail("more than " + std::to_string(max_points_) + " points in the range");
        }
        points_.push_back(p);
      }
    }
    return true;
  }

  bool failed() const { return !problem_.empty(); }
  const std::string& problem() const { return problem_; }
  bool found() const { return in_force_ || !points_.empty(); }

  void result(std::vector<CurvePoint>* out) {
    out->clear();
    out->reserve(points_.size() + 1);
    if (in_force_) out->push_back(*in_force_);
    out->insert(out->end(), points_.begin(), points_.end());
  }

 private:
  bool fail(std::string problem) {
    problem_ = std::move(problem);
    return false;
  }

  SeriesKey key_;
  int64_t t0_, t1_;
  size_t max_points_;
  SeriesId id_ = timeline::kNoSeries;
  const Series* seen_ = nullptr;
  uint64_t next_ = 0;
  std::optional<CurvePoint> in_force_;
  std::vector<CurvePoint> points_;
  std::string problem_;
};

// Past t1, whether the replay's Allocated could still be rewritten by a framework block or
// a first pool sample to come: the device has neither yet and Reserved's window still holds
// its whole history.
bool restart_still_possible(const Timeline& replay, const SeriesKey& key) {
  for (const timeline::SeriesInfo& layer : replay.series(key.pid, key.device, GroupBy::kLayer)) {
    if (timeline::is_framework_slot(int(layer.key.group))) return false;
  }
  if (replay.summary(key.pid, key.device).pool_snapshots != 0) return false;
  const SeriesId reserved = replay.find({key.pid, key.device, timeline::Curve::kReserved});
  return reserved != timeline::kNoSeries && replay.data(reserved).window().first_index() == 0;
}

}  // namespace

bool read_series_detail(const std::string& path, const SeriesKey& key, int64_t t0_ns, int64_t t1_ns,
                        const StoreDetailOptions& options, std::vector<CurvePoint>* out,
                        std::string* error) {
  out->clear();
  if (t1_ns < t0_ns) {
    *error = path + ": empty range: t1 " + std::to_string(t1_ns) + " is before t0 " +
             std::to_string(t0_ns);
    return false;
  }
  // Owner groups are ids in the live timeline's strings: find the label, and its id in
  // the replay's strings once those exist.
  std::string owner_label;
  const bool translate_owner =
      key.group_by == GroupBy::kOwner && key.group != 0 && key.group != timeline::kOverflowGroup;
  if (translate_owner) {
    if (options.owner_label) owner_label = options.owner_label(key.group);
    if (owner_label.empty()) {
      *error = path + ": no label for owner " + std::to_string(key.group) +
               " (StoreDetailOptions::owner_label)";
      return false;
    }
  }

  const bool look_ahead = may_restart(key);
  RecordingFilter filter;
  filter.pid = key.pid;
  filter.skip_names_and_stacks = true;  // the timeline reads neither
  if (!look_ahead) filter.max_ts_ns = t1_ns;

  Timeline replay(options.config);
  Harvest harvest(key, t0_ns, t1_ns, options.max_points);
  const size_t chunk = std::max<size_t>(1, std::min(options.config.curve_limits.window_points,
                                                    options.config.group_limits.window_points));
  std::vector<MemEvent> scope_events;
  Recording recording;
  bool first_batch = true;
  auto on_batch = [&](std::span<const MemEvent> batch) {
    if (first_batch && translate_owner) {
      // Interning a label the file has not shown yet is harmless: the reader asks the
      // same table and gets the same id when the label comes.
      harvest.set_group(recording.strings.intern(owner_label));
    }
    first_batch = false;
    scope_events.clear();
    for (const MemEvent& e : batch) {
      if (in_scope(e, key)) scope_events.push_back(e);
    }
    for (size_t at = 0; at < scope_events.size(); at += chunk) {
      const size_t count = std::min(chunk, scope_events.size() - at);
      replay.add(scope_events.data() + at, count);
      if (!harvest.take(replay)) return false;
      if (scope_events[at + count - 1].ts_ns > t1_ns && !restart_still_possible(replay, key)) {
        return false;  // past t1, and nothing later can change the answer
      }
    }
    return true;
  };
  const std::string read_path =
      !file_exists(path) && file_exists(path + ".partial") ? path + ".partial" : path;
  if (!stream_recording_range(read_path, filter, options.batch_events, &recording, on_batch,
                              error)) {
    return false;
  }
  if (harvest.failed()) {
    *error = read_path + ": " + harvest.problem();
    return false;
  }
  if (!harvest.found()) {
    *error = read_path + ": process " + std::to_string(key.pid) +
             " has no such series at or before " + std::to_string(t1_ns);
    return false;
  }
  harvest.result(out);
  return true;
}

timeline::DetailSource make_store_detail_source(std::string recording_path,
                                                StoreDetailOptions options) {
  return [path = std::move(recording_path), options = std::move(options)](
             const SeriesKey& key, int64_t t0_ns, int64_t t1_ns, std::vector<CurvePoint>& out) {
    // The timeline's thread calls this from a chart's query: nothing may escape.
    try {
      std::string error;
      if (read_series_detail(path, key, t0_ns, t1_ns, options, &out, &error)) return true;
    } catch (const std::exception&) {
    } catch (...) {
    }
    out.clear();
    return false;
  };
}

}  // namespace memtap
