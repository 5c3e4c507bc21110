// Older detail of a curve, replayed from the recording (see store_detail_source.h).
#include "monitor/store/detail/store_detail_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <exception>
#include <limits>
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
// those window queries over each of the spans would return. Called after every chunk of
// at most the window's capacity in events (an event adds at most one point to a series),
// so no point leaves the window before it is seen.
class Harvest {
 public:
  Harvest(SeriesKey key, std::vector<SeriesSpan> spans, size_t max_points)
      : key_(key), spans_(std::move(spans)), max_points_(max_points), found_(spans_.size()) {}

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
      last_.reset();
      span_ = 0;
      taken_ = 0;
      for (std::vector<CurvePoint>& f : found_) f.clear();
      next_ = window.first_index();
      if (next_ != 0) return fail("the replay lost points of the series");
    }
    if (next_ < window.first_index()) return fail("the replay lost points of the series");
    for (; next_ < window.pushed(); ++next_) {
      const CurvePoint& p = window.at_index(next_);
      // Points come in time order: the spans p is past are complete, and each next one
      // begins with the point in force at its start.
      while (span_ < spans_.size() && p.ts_ns > spans_[span_].t1_ns) {
        if (++span_ < spans_.size() && last_ && !add(*last_)) return false;
      }
      last_ = p;
      if (span_ == spans_.size()) continue;
      std::vector<CurvePoint>& f = found_[span_];
      if (p.ts_ns <= spans_[span_].t0_ns) {
        if (!f.empty()) {
          f.back() = p;  // the point in force at t0 so far
          continue;
        }
      }
      if (!add(p)) return false;
    }
    return true;
  }

  bool failed() const { return !problem_.empty(); }
  const std::string& problem() const { return problem_; }
  bool found(size_t span) const { return !found_[span].empty(); }
  std::vector<std::vector<CurvePoint>> take_result() { return std::move(found_); }

 private:
  bool add(const CurvePoint& p) {
    if (taken_ >= max_points_) {
      return fail("more than " + std::to_string(max_points_) + " points in the range");
    }
    ++taken_;
    found_[span_].push_back(p);
    return true;
  }

  bool fail(std::string problem) {
    problem_ = std::move(problem);
    return false;
  }

  SeriesKey key_;
  std::vector<SeriesSpan> spans_;
  size_t max_points_;
  SeriesId id_ = timeline::kNoSeries;
  const Series* seen_ = nullptr;
  uint64_t next_ = 0;
  size_t span_ = 0;  // the first span not yet complete
  size_t taken_ = 0;
  std::optional<CurvePoint> last_;
  // Each span's points: the one in force at its t0, then those after.
  std::vector<std::vector<CurvePoint>> found_;
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

bool read_series_spans(const std::string& path, const std::vector<SeriesSpans>& requests,
                       const StoreDetailOptions& options, std::vector<SpansAnswer>* answers,
                       std::string* error) {
  answers->assign(requests.size(), SpansAnswer{});
  if (requests.empty()) return true;
  const SeriesKey& scope = requests.front().key;
  int64_t t1_ns = std::numeric_limits<int64_t>::min();
  bool look_ahead = false;
  // Owner groups are ids in the live timeline's strings: the label of each, and its id in
  // the replay's strings once those exist.
  std::vector<std::string> owner_labels(requests.size());
  std::vector<Harvest> harvests;
  harvests.reserve(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    const SeriesSpans& q = requests[r];
    if (q.key.pid != scope.pid || q.key.device != scope.device) {
      *error = path + ": request " + std::to_string(r) +
               ": expected the first one's process and device (one replay serves one scope)";
      return false;
    }
    if (q.spans.empty()) {
      *error = path + ": request " + std::to_string(r) + ": expected at least one span";
      return false;
    }
    for (size_t i = 0; i < q.spans.size(); ++i) {
      const SeriesSpan& span = q.spans[i];
      if (span.t1_ns < span.t0_ns || (i > 0 && span.t0_ns < q.spans[i - 1].t1_ns)) {
        *error = path + ": request " + std::to_string(r) + ", span " + std::to_string(i) + " (" +
                 std::to_string(span.t0_ns) + ".." + std::to_string(span.t1_ns) +
                 "): expected t0 <= t1, and after the span before it";
        return false;
      }
    }
    t1_ns = std::max(t1_ns, q.spans.back().t1_ns);
    look_ahead = look_ahead || may_restart(q.key);
    if (q.key.group_by == GroupBy::kOwner && q.key.group != 0 &&
        q.key.group != timeline::kOverflowGroup) {
      if (options.owner_label) owner_labels[r] = options.owner_label(q.key.group);
      if (owner_labels[r].empty()) {
        *error = path + ": no label for owner " + std::to_string(q.key.group) +
                 " (StoreDetailOptions::owner_label)";
        return false;
      }
    }
    harvests.emplace_back(q.key, q.spans, q.max_points != 0 ? q.max_points : options.max_points);
  }

  RecordingFilter filter;
  filter.pid = scope.pid;
  filter.skip_names_and_stacks = true;  // the timeline reads neither
  if (!look_ahead) filter.max_ts_ns = t1_ns;

  Timeline replay(options.config);
  const size_t chunk = std::max<size_t>(1, std::min(options.config.curve_limits.window_points,
                                                    options.config.group_limits.window_points));
  std::vector<MemEvent> scope_events;
  Recording recording;
  bool first_batch = true;
  auto on_batch = [&](std::span<const MemEvent> batch) {
    if (first_batch) {
      // Interning a label the file has not shown yet is harmless: the reader asks the
      // same table and gets the same id when the label comes.
      for (size_t r = 0; r < requests.size(); ++r) {
        if (!owner_labels[r].empty())
          harvests[r].set_group(recording.strings.intern(owner_labels[r]));
      }
    }
    first_batch = false;
    scope_events.clear();
    for (const MemEvent& e : batch) {
      if (in_scope(e, scope)) scope_events.push_back(e);
    }
    for (size_t at = 0; at < scope_events.size(); at += chunk) {
      const size_t count = std::min(chunk, scope_events.size() - at);
      replay.add(scope_events.data() + at, count);
      bool going = false, may_change = false;
      for (size_t r = 0; r < requests.size(); ++r) {
        if (harvests[r].failed() || !harvests[r].take(replay)) continue;
        going = true;
        may_change = may_change || restart_still_possible(replay, requests[r].key);
      }
      if (!going) return false;  // every answer failed
      if (scope_events[at + count - 1].ts_ns > t1_ns && !may_change) {
        return false;  // past t1, and nothing later can change the answers
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
  for (size_t r = 0; r < requests.size(); ++r) {
    SpansAnswer& a = (*answers)[r];
    if (harvests[r].failed()) {
      a.error = read_path + ": " + harvests[r].problem();
    } else if (!harvests[r].found(requests[r].spans.size() - 1)) {
      a.error = read_path + ": process " + std::to_string(scope.pid) +
                " has no such series at or before " +
                std::to_string(requests[r].spans.back().t1_ns);
    } else {
      a.ok = true;
      a.points = harvests[r].take_result();
    }
  }
  return true;
}

bool read_series_detail(const std::string& path, const SeriesKey& key, int64_t t0_ns, int64_t t1_ns,
                        const StoreDetailOptions& options, std::vector<CurvePoint>* out,
                        std::string* error) {
  out->clear();
  if (t1_ns < t0_ns) {
    *error = path + ": empty range: t1 " + std::to_string(t1_ns) + " is before t0 " +
             std::to_string(t0_ns);
    return false;
  }
  std::vector<SpansAnswer> answers;
  if (!read_series_spans(path, {{key, {{t0_ns, t1_ns}}}}, options, &answers, error)) return false;
  if (!answers.front().ok) {
    *error = answers.front().error;
    return false;
  }
  *out = std::move(answers.front().points.front());
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
