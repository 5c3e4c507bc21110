// See curves_data.h.
#include "monitor/viewdata/curves_data.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "monitor/engine/saturating.h"
#include "monitor/engine/timeline/curve_rules.h"
#include "monitor/report/units.h"
#include "monitor/store/detail/store_detail_source.h"
#include "monitor/viewdata/labels.h"

namespace memtap::viewdata {

namespace {

using timeline::CurvePoint;
using timeline::CurveQuery;
using timeline::EnvelopeBucket;
using timeline::GroupBy;
using timeline::Resolution;
using timeline::SeriesInfo;

// Up to this many points a pixel, the range's points are sampled with LTTB; beyond, the
// pyramid's envelope answers.
constexpr size_t kLttbPointsPerPixel = 16;

const char* group_layer_label(uint64_t group) {
  if (group == timeline::kHostMmapGroup) return layer_label(Layer::kHost, true);
  return layer_label(Layer(group));
}

std::string group_label(const timeline::SeriesKey& key, const StringTable& strings) {
  if (key.group == timeline::kOverflowGroup) {
    return key.group_by == GroupBy::kOwner ? "(other owners)" : "(other streams)";
  }
  switch (key.group_by) {
    case GroupBy::kOverall:
      return timeline::curve_name(key.curve);
    case GroupBy::kLayer:
      return group_layer_label(key.group);
    case GroupBy::kOwner:
      return key.group == 0 || key.group >= strings.size() ? "(no owner)"
                                                           : strings.get(uint32_t(key.group));
    case GroupBy::kStream:
      return "stream " + std::to_string(key.group);
  }
  return "?";
}

int64_t peak_of(const CurveLine& line) {
  int64_t peak = std::numeric_limits<int64_t>::min();
  for (const CurvePoint& p : line.points) peak = std::max(peak, p.value_bytes);
  for (const EnvelopeBucket& b : line.envelope) peak = std::max(peak, b.max_bytes);
  return peak == std::numeric_limits<int64_t>::min() ? 0 : peak;
}

// How many points a line's envelope stands for: the series' points before its window, spread
// evenly over the time they took, over the envelope's span.
uint64_t envelope_points(const timeline::Series& series, const CurveLine& line) {
  if (line.envelope.empty()) return 0;
  const timeline::PointWindow& w = series.window();
  const uint64_t before = w.size() > 0 ? w.first_index() : series.points();
  const int64_t from = series.first_ts_ns();
  const int64_t to = w.size() > 0 ? w.at(0).ts_ns : line.envelope.back().t_last_ns;
  const int64_t span = line.envelope.back().t_last_ns - line.envelope.front().t_first_ns;
  if (to <= from) return before;
  return uint64_t(double(before) *
                  std::min(1.0, double(std::max<int64_t>(span, 0)) / double(to - from))) +
         line.envelope.size();
}

CurveLine line_of(const timeline::Timeline& tl, const SeriesInfo& info, std::string name,
                  int64_t t0, int64_t t1, size_t max_points) {
  CurveLine line;
  line.name = std::move(name);
  line.key = info.key;
  const timeline::Series& series = tl.data(info.id);
  line.total_points = series.points();
  if (series.empty()) return line;
  // Far more points than pixels: LTTB would visit every one of them at every live refresh
  // (4 curves of a 262,144-point window, ten times a second, took a third of a core); the
  // pyramid's min/max per pixel costs what the pixels cost, and keeps every spike.
  const timeline::PointWindow& w = series.window();
  if (series.window_covers(t0) &&
      w.upper_bound(t1) - std::min(w.upper_bound(t0), w.upper_bound(t1)) >
          kLttbPointsPerPixel * max_points) {
    line.resolution = Resolution::kEnvelope;
    line.envelope = series.envelope(t0, t1, max_points);
    line.peak_bytes = peak_of(line);
    // Not missing detail: the window holds these points, too many for the pixels.
    line.envelope_points = std::numeric_limits<uint64_t>::max();
    return line;
  }
  CurveQuery q = tl.points(info.id, t0, t1, max_points);
  line.resolution = q.resolution;
  line.points = std::move(q.points);
  line.envelope = std::move(q.envelope);
  // The window may still hold the range's newer part: that part exactly, the older part
  // as an envelope, the points shared out by time.
  const timeline::PointWindow& window = series.window();
  if (q.resolution == Resolution::kEnvelope && window.size() > 0 && t1 > t0) {
    const int64_t w0 = window.at(0).ts_ns;
    if (w0 > t0 && w0 < t1) {
      const size_t older =
          std::max<size_t>(2, size_t(double(max_points) * double(w0 - t0) / double(t1 - t0)));
      CurveQuery before = series.query(t0, w0 - 1, older);
      CurveQuery after = series.query(w0, t1, std::max<size_t>(2, max_points - older));
      if (before.resolution == Resolution::kEnvelope && after.resolution != Resolution::kEnvelope) {
        line.envelope = std::move(before.envelope);
        line.points = std::move(after.points);
        // The window's first answer repeats the point in force at w0: keep the envelope's end.
        while (!line.envelope.empty() && !line.points.empty() &&
               line.envelope.back().t_first_ns >= line.points.front().ts_ns) {
          line.envelope.pop_back();
        }
      }
    }
  }
  line.peak_bytes = peak_of(line);
  line.envelope_points = envelope_points(series, line);
  return line;
}

// The step value of a line at t: the last point (or bucket) starting at or before t.
int64_t value_of(const CurveLine& line, int64_t t) {
  if (!line.points.empty() && (line.envelope.empty() || t >= line.points.front().ts_ns)) {
    auto it = std::upper_bound(line.points.begin(), line.points.end(), t,
                               [](int64_t v, const CurvePoint& p) { return v < p.ts_ns; });
    return it == line.points.begin() ? line.points.front().value_bytes : std::prev(it)->value_bytes;
  }
  if (!line.envelope.empty()) {
    auto it = std::upper_bound(line.envelope.begin(), line.envelope.end(), t,
                               [](int64_t v, const EnvelopeBucket& b) { return v < b.t_first_ns; });
    // Before the first bucket: its first value, which holds from t0.
    return it == line.envelope.begin() ? line.envelope.front().first_bytes
                                       : bucket_value_at(*std::prev(it), t);
  }
  return 0;
}

// The sum of several group lines, sampled where any of them changes (at most max_points
// times, evenly over the range when there are more): the "other" line of Group By.
CurveLine sum_lines(const std::vector<CurveLine>& lines, std::string name, int64_t t0, int64_t t1,
                    size_t max_points) {
  CurveLine sum;
  sum.name = std::move(name);
  std::vector<int64_t> times;
  for (const CurveLine& l : lines) {
    for (const CurvePoint& p : l.points) times.push_back(p.ts_ns);
    for (const EnvelopeBucket& b : l.envelope) times.push_back(b.t_first_ns);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  if (times.size() > max_points && max_points >= 2 && t1 > t0) {
    times.clear();
    for (size_t i = 0; i < max_points; ++i) {
      // Times from a file: their span may be past int64.
      times.push_back(saturating_add(t0, int64_from_double(double(saturating_sub(t1, t0)) *
                                                           double(i) / double(max_points - 1))));
    }
    sum.resolution = Resolution::kLttb;
  }
  for (int64_t t : times) {
    int64_t v = 0;
    for (const CurveLine& l : lines) v += value_of(l, t);
    sum.points.push_back({t, v});
  }
  for (const CurveLine& l : lines) sum.total_points += l.total_points;
  sum.peak_bytes = peak_of(sum);
  return sum;
}

bool same_line(const CurveLine& a, const CurveLine& b) {
  const auto same_point = [](const CurvePoint& p, const CurvePoint& q) {
    return p.ts_ns == q.ts_ns && p.value_bytes == q.value_bytes;
  };
  const auto same_bucket = [](const EnvelopeBucket& p, const EnvelopeBucket& q) {
    return p.t_first_ns == q.t_first_ns && p.t_last_ns == q.t_last_ns &&
           p.min_bytes == q.min_bytes && p.max_bytes == q.max_bytes &&
           p.last_bytes == q.last_bytes && p.first_bytes == q.first_bytes &&
           p.t_min_ns == q.t_min_ns && p.t_max_ns == q.t_max_ns;
  };
  return std::equal(a.points.begin(), a.points.end(), b.points.begin(), b.points.end(),
                    same_point) &&
         std::equal(a.envelope.begin(), a.envelope.end(), b.envelope.begin(), b.envelope.end(),
                    same_bucket);
}

// Whether the scope has blocks of a framework layer: a Group By Layer series of one.
bool has_framework_layer(const timeline::Timeline& tl, uint32_t pid, int32_t device) {
  for (const SeriesInfo& s : tl.series(pid, device, GroupBy::kLayer)) {
    if (s.key.group < uint64_t(timeline::kLayerSlots) &&
        timeline::is_framework_slot(int(s.key.group))) {
      return true;
    }
  }
  return false;
}

}  // namespace

CurvesData compute_curves(const EngineView& engine, const CurvesRequest& r) {
  const timeline::Timeline& tl = engine.analyzer.timeline();
  CurvesData out;
  out.pid = r.pid;
  out.device = r.device;
  out.group_by = r.group_by;
  const timeline::ScopeSummary summary = tl.summary(r.pid, r.device);
  if (summary.events == 0 || summary.first_ts_ns == kUnknown) return out;
  out.session_first_ns = summary.first_ts_ns;
  out.session_last_ns = summary.last_ts_ns;
  out.capacity_bytes = summary.capacity_bytes;
  out.framework_pool = has_framework_layer(tl, r.pid, r.device) || summary.pool_snapshots != 0;
  out.t0_ns = r.t1_ns > r.t0_ns ? r.t0_ns : summary.first_ts_ns;
  out.t1_ns = r.t1_ns > r.t0_ns ? r.t1_ns : summary.last_ts_ns;
  const size_t max_points = std::max<size_t>(r.max_points, 2);
  out.columns = max_points;
  out.scope_events = summary.events;
  out.step_marks = compute_step_marks(engine, r.pid, r.device, out.t0_ns, out.t1_ns, max_points);

  const std::vector<SeriesInfo> overall = tl.series(r.pid, r.device, GroupBy::kOverall);
  if (r.group_by == GroupBy::kOverall) {
    for (const SeriesInfo& s : overall) {
      if (s.key.curve == timeline::Curve::kFragmentation && !r.fragmentation) continue;
      out.lines.push_back(
          line_of(tl, s, timeline::curve_name(s.key.curve), out.t0_ns, out.t1_ns, max_points));
    }
  } else {
    std::vector<CurveLine> groups;
    for (const SeriesInfo& s : tl.series(r.pid, r.device, r.group_by)) {
      groups.push_back(
          line_of(tl, s, group_label(s.key, engine.strings), out.t0_ns, out.t1_ns, max_points));
    }
    // The largest groups in the range are drawn; the rest are summed into one line. One
    // group left over is drawn under its own name: a line of "1 others" would take the same
    // room and hide which group it is.
    std::stable_sort(groups.begin(), groups.end(), [](const CurveLine& a, const CurveLine& b) {
      return a.peak_bytes > b.peak_bytes;
    });
    const size_t most = std::max<size_t>(r.max_groups, 1);
    const size_t shown = groups.size() <= most + 1 ? groups.size() : most;
    if (groups.size() > shown) {
      std::vector<CurveLine> rest(std::make_move_iterator(groups.begin() + long(shown)),
                                  std::make_move_iterator(groups.end()));
      out.hidden_groups = rest.size();
      groups.resize(shown);
      groups.push_back(sum_lines(rest, "(" + std::to_string(rest.size()) + " others)", out.t0_ns,
                                 out.t1_ns, max_points));
    }
    out.lines = std::move(groups);
  }

  if (r.overview_points != 0) {
    out.overview_columns = r.overview_points;
    for (const SeriesInfo& s : overall) {
      if (s.key.curve != timeline::Curve::kAllocated && s.key.curve != timeline::Curve::kReserved) {
        continue;
      }
      // Only the engine's memory: the overview never reads the store.
      const timeline::Series& series = tl.data(s.id);
      CurveLine line;
      line.name = timeline::curve_name(s.key.curve);
      line.key = s.key;
      line.total_points = series.points();
      if (!series.empty()) {
        CurveQuery q = series.query(summary.first_ts_ns, summary.last_ts_ns, r.overview_points);
        line.resolution = q.resolution;
        line.points = std::move(q.points);
        line.envelope = std::move(q.envelope);
        line.peak_bytes = peak_of(line);
      }
      out.overview.push_back(std::move(line));
    }
  }
  return out;
}

bool is_wide_bucket(int64_t t0_ns, int64_t t1_ns, size_t columns, const EnvelopeBucket& b) {
  if (columns == 0 || t1_ns <= t0_ns) return false;
  const double column_ns = (double(t1_ns) - double(t0_ns)) / double(columns);
  return double(b.t_last_ns) - double(b.t_first_ns) >= double(kWideBucketColumns) * column_ns;
}

bool needs_detail(const CurvesData& data, uint64_t max_points) {
  auto any_wide = [](const CurveLine& l, int64_t t0, int64_t t1, size_t columns) {
    return std::any_of(l.envelope.begin(), l.envelope.end(),
                       [&](const EnvelopeBucket& b) { return is_wide_bucket(t0, t1, columns, b); });
  };
  for (const CurveLine& l : data.lines) {
    if (l.envelope.empty() || l.key.pid != data.pid) continue;
    if (l.envelope_points <= max_points) return true;
    if (any_wide(l, data.t0_ns, data.t1_ns, data.columns)) return true;
  }
  for (const CurveLine& l : data.overview) {
    if (l.key.pid == data.pid &&
        any_wide(l, data.session_first_ns, data.session_last_ns, data.overview_columns))
      return true;
  }
  return false;
}

namespace {

// The spans of an envelope's wide buckets, each from just before its first point: the
// point in force at the span's start is then the one before the bucket, and the bucket's
// own first point is in the span.
// Two buckets can meet at one time (points at the same nanosecond): a span then begins
// where the one before it ended.
std::vector<SeriesSpan> wide_spans(const std::vector<EnvelopeBucket>& envelope, int64_t t0_ns,
                                   int64_t t1_ns, size_t columns) {
  std::vector<SeriesSpan> spans;
  for (const EnvelopeBucket& b : envelope) {
    if (!is_wide_bucket(t0_ns, t1_ns, columns, b)) continue;
    const int64_t from = spans.empty()
                             ? saturating_sub(b.t_first_ns, 1)
                             : std::max(saturating_sub(b.t_first_ns, 1), spans.back().t1_ns);
    spans.push_back({from, b.t_last_ns});
  }
  return spans;
}

// `envelope` with its wide buckets (by the same test as wide_spans) replaced by the points
// found for each, as buckets of one point each (the chart merges them per pixel column). A
// bucket whose points did not come back as it stood for them stays.
std::vector<EnvelopeBucket> with_points(const std::vector<EnvelopeBucket>& envelope, int64_t t0_ns,
                                        int64_t t1_ns, size_t columns,
                                        const std::vector<std::vector<CurvePoint>>& found) {
  std::vector<EnvelopeBucket> out;
  size_t span = 0;
  for (const EnvelopeBucket& b : envelope) {
    if (span == found.size() || !is_wide_bucket(t0_ns, t1_ns, columns, b)) {
      out.push_back(b);
      continue;
    }
    const std::vector<CurvePoint>& points = found[span++];
    size_t first = 0;  // past the point in force before the bucket
    while (first < points.size() && points[first].ts_ns < b.t_first_ns) ++first;
    if (first == points.size() || points[first].ts_ns != b.t_first_ns ||
        points.back().ts_ns != b.t_last_ns) {
      out.push_back(b);
      continue;
    }
    for (size_t i = first; i < points.size(); ++i)
      out.push_back(timeline::bucket_of_point(points[i].ts_ns, points[i].value_bytes));
  }
  return out;
}

}  // namespace

CurvesData refine_curves(const std::string& recording_path, CurvesData data, size_t max_points,
                         uint64_t max_envelope_points, uint64_t max_wide_events) {
  // Owner groups are ids in the live engine's string table: the replay finds them by label.
  std::unordered_map<uint64_t, std::string> owners;
  for (const CurveLine& l : data.lines) {
    if (l.key.group_by == GroupBy::kOwner && l.key.group != timeline::kOverflowGroup &&
        l.key.group != 0) {
      owners[l.key.group] = l.name;
    }
  }
  StoreDetailOptions options;
  options.owner_label = [&owners](uint64_t owner) {
    auto it = owners.find(owner);
    return it == owners.end() ? std::string() : it->second;
  };
  // What to ask of the one replay: each line's whole range when its envelope stands for
  // few points, else its wide buckets' spans, and the overview's wide buckets'.
  struct Ask {
    CurveLine* line;
    bool whole;
    int64_t t0_ns, t1_ns;  // the range and columns its wide buckets were found in
    size_t columns;
  };
  std::vector<Ask> asks;
  std::vector<SeriesSpans> requests;
  for (CurveLine& line : data.lines) {
    // The "(N others)" line is a sum of several series: it has no key of its own.
    if (line.envelope.empty() || line.key.pid != data.pid) continue;
    if (line.envelope_points <= max_envelope_points) {
      requests.push_back({line.key, {{data.t0_ns, data.t1_ns}}, 0});
      asks.push_back({&line, true, data.t0_ns, data.t1_ns, data.columns});
      continue;
    }
    std::vector<SeriesSpan> spans = wide_spans(line.envelope, data.t0_ns, data.t1_ns, data.columns);
    if (spans.empty()) continue;
    requests.push_back({line.key, std::move(spans), kWideBucketPoints});
    asks.push_back({&line, false, data.t0_ns, data.t1_ns, data.columns});
  }
  for (CurveLine& line : data.overview) {
    if (line.envelope.empty() || line.key.pid != data.pid) continue;
    std::vector<SeriesSpan> spans = wide_spans(line.envelope, data.session_first_ns,
                                               data.session_last_ns, data.overview_columns);
    if (spans.empty()) continue;
    requests.push_back({line.key, std::move(spans), kWideBucketPoints});
    asks.push_back(
        {&line, false, data.session_first_ns, data.session_last_ns, data.overview_columns});
  }
  // Whole ranges are asked for by a zoom, and are worth their replay; wide buckets alone,
  // only when the replay is short.
  const bool any_whole =
      std::any_of(asks.begin(), asks.end(), [](const Ask& a) { return a.whole; });
  int64_t read_until = data.session_first_ns;
  for (const SeriesSpans& r : requests) read_until = std::max(read_until, r.spans.back().t1_ns);
  // In doubles: a file's times are anything int64 holds.
  const double span = double(data.session_last_ns) - double(data.session_first_ns);
  const double share =
      span > 0 ? std::clamp((double(read_until) - double(data.session_first_ns)) / span, 0.0, 1.0)
               : 1.0;
  if (!any_whole && double(data.scope_events) * share > double(max_wide_events)) return data;
  std::vector<SpansAnswer> answers;
  std::string error;
  if (requests.empty() || !read_series_spans(recording_path, requests, options, &answers, &error)) {
    return data;
  }
  for (size_t i = 0; i < asks.size(); ++i) {
    if (!answers[i].ok) continue;
    CurveLine& line = *asks[i].line;
    if (!asks[i].whole) {
      line.envelope = with_points(line.envelope, asks[i].t0_ns, asks[i].t1_ns, asks[i].columns,
                                  answers[i].points);
      continue;
    }
    CurveQuery q = timeline::downsample_points(std::move(answers[i].points.front()),
                                               std::max<size_t>(max_points, 2));
    line.envelope.clear();
    line.points = std::move(q.points);
    line.resolution = q.resolution;
    line.from_store = true;
    line.peak_bytes = peak_of(line);
  }
  return data;
}

std::vector<std::vector<size_t>> identical_lines(const CurvesData& data) {
  std::vector<std::vector<size_t>> groups;
  std::vector<bool> grouped(data.lines.size(), false);
  for (size_t i = 0; i < data.lines.size(); ++i) {
    if (grouped[i] || (data.lines[i].points.empty() && data.lines[i].envelope.empty())) continue;
    std::vector<size_t> group = {i};
    for (size_t j = i + 1; j < data.lines.size(); ++j) {
      if (!grouped[j] && same_line(data.lines[i], data.lines[j])) {
        group.push_back(j);
        grouped[j] = true;
      }
    }
    const bool only_active =
        group.size() == 2 && data.group_by == GroupBy::kOverall &&
        data.lines[group[0]].name == timeline::curve_name(timeline::Curve::kAllocated) &&
        data.lines[group[1]].name == timeline::curve_name(timeline::Curve::kActive);
    if (group.size() >= 2 && !only_active) groups.push_back(std::move(group));
  }
  return groups;
}

bool active_apart(const CurvesData& data) {
  if (data.group_by != GroupBy::kOverall) return false;
  const CurveLine *allocated = nullptr, *active = nullptr;
  for (const CurveLine& l : data.lines) {
    if (l.name == timeline::curve_name(timeline::Curve::kAllocated)) allocated = &l;
    if (l.name == timeline::curve_name(timeline::Curve::kActive)) active = &l;
  }
  return allocated && active && !same_line(*allocated, *active);
}

std::vector<int64_t> values_at(const CurvesData& data, int64_t t_ns) {
  std::vector<int64_t> out;
  for (const CurveLine& line : data.lines) out.push_back(value_of(line, t_ns));
  return out;
}

std::optional<StepChange> allocated_over_step(const CurvesData& data, int64_t t_ns) {
  int64_t begin = 0, end = 0;
  if (!step_span_at(data.step_marks, t_ns, data.t1_ns, &begin, &end) || end >= data.t1_ns) {
    return std::nullopt;
  }
  // As the next step begins: what was in force just before its first event.
  return allocated_between(data, begin, end - 1);
}

std::optional<StepChange> allocated_between(const CurvesData& data, int64_t begin_ns,
                                            int64_t end_ns) {
  if (data.group_by != GroupBy::kOverall || begin_ns < data.t0_ns || end_ns > data.t1_ns ||
      end_ns < begin_ns) {
    return std::nullopt;
  }
  const char* allocated = timeline::curve_name(timeline::Curve::kAllocated);
  const auto line = std::find_if(data.lines.begin(), data.lines.end(),
                                 [&](const CurveLine& l) { return l.name == allocated; });
  if (line == data.lines.end()) return std::nullopt;
  return StepChange{value_of(*line, begin_ns), value_of(*line, end_ns)};
}

std::vector<ScopeEntry> list_scopes(const EngineView& engine) {
  std::vector<ScopeEntry> out;
  for (const timeline::ScopeId& s : engine.analyzer.timeline().scopes()) {
    out.push_back({s.pid, s.device});
  }
  std::sort(out.begin(), out.end(), [](const ScopeEntry& a, const ScopeEntry& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.device < b.device;
  });
  return out;
}

}  // namespace memtap::viewdata
