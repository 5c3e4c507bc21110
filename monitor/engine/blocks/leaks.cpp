// See leaks.h. The boundary values are kept in a ring per key, so recording a boundary is
// O(keys) and judging one is O(keys x window), both independent of the session's length.
#include "monitor/engine/blocks/leaks.h"

#include <algorithm>
#include <limits>

#include "monitor/engine/saturating.h"

namespace memtap::blocks {
namespace {

constexpr Dim kHistoryDims[2] = {kByOwner, kByStack};

std::vector<AliveGroup> alive_groups(const std::vector<KeyBytes>& v, const KeyIndex& keys,
                                     const StringTable& strings, Dim dim, size_t top_n) {
  std::vector<uint32_t> order;
  for (uint32_t k = 0; k < v.size(); ++k)
    if (v[k].blocks != 0) order.push_back(k);
  const size_t n = std::min(top_n, order.size());
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](uint32_t a, uint32_t b) {
    if (v[a].bytes != v[b].bytes) return v[a].bytes > v[b].bytes;
    return keys.string_id(dim, a) < keys.string_id(dim, b);
  });
  std::vector<AliveGroup> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back({label_of(keys, strings, dim, order[i]), v[order[i]].bytes, v[order[i]].blocks});
  return out;
}

// Suspects among the keys of one dimension; n >= 1 deltas are judged.
std::vector<LeakSuspect> suspects(const StepHistory& h, int d, const KeyIndex& keys,
                                  const StringTable& strings, const LeakOptions& o, size_t n,
                                  size_t top_n) {
  const size_t w = h.window + 1;
  const uint64_t last = h.last_step;
  const size_t key_count = h.min_bytes[d].size();
  std::vector<double> y(n + 1);
  const double x_mean = double(n) / 2;
  double sxx = 0;
  for (size_t j = 0; j <= n; ++j) sxx += (double(j) - x_mean) * (double(j) - x_mean);
  std::vector<LeakSuspect> out;
  for (uint32_t k = 0; k < key_count; ++k) {
    uint64_t grown = 0, fell = 0;
    size_t last_rise = 0, longest_wait = 0;  // judged steps are 1..n
    double y_mean = 0;
    for (size_t j = 0; j <= n; ++j) {
      y[j] = double(h.ring[d][k * w + (last - n + j) % w]);
      y_mean += y[j];
      if (j == 0) continue;
      if (y[j] > y[j - 1]) {
        ++grown;
        longest_wait = std::max(longest_wait, j - last_rise);
        last_rise = j;
      }
      if (y[j] < y[j - 1]) ++fell;
    }
    const bool steady = double(grown) >= o.min_growth_fraction * double(n);
    // Growth every few steps that still goes on: the steps since the last rise are fewer
    // than the longest wait for one (a warm-up that grew step after step and stopped has
    // waited at least as long since; after three steps, two rises and a flat step are one).
    const bool every_few_steps = fell == 0 && grown >= 2 &&
                                 double(grown) >= o.min_periodic_growth_fraction * double(n) &&
                                 n - last_rise < longest_wait;
    if (!steady && !every_few_steps) continue;
    y_mean /= double(n + 1);
    double sxy = 0;
    for (size_t j = 0; j <= n; ++j) sxy += (double(j) - x_mean) * (y[j] - y_mean);
    const double slope = sxy / sxx;
    if (!(slope > o.min_bytes_per_step)) continue;
    if (slope * double(n) < o.min_growth_of_live * y[n]) continue;
    LeakSuspect s;
    s.key = label_of(keys, strings, kHistoryDims[d], k);
    s.bytes_per_step = slope;
    s.steps_judged = n;
    s.steps_grown = grown;
    s.growth_start_step = h.min_boundary[d][k];
    s.growth_start_ns = h.min_boundary_ts_ns[d][k];
    // From the ring, not back from y: int64's top is 2^63 as a double, past int64.
    s.first_bytes = h.ring[d][k * w + (last - n) % w];
    s.last_bytes = h.ring[d][k * w + last % w];
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const LeakSuspect& a, const LeakSuspect& b) {
    if (a.bytes_per_step != b.bytes_per_step) return a.bytes_per_step > b.bytes_per_step;
    return a.key.string_id < b.key.string_id;
  });
  if (out.size() > top_n) out.resize(top_n);
  return out;
}

// Least-squares slope of the live bytes at consecutive step boundaries (each step's start).
double boundary_slope(const std::vector<StepFigures>& steps) {
  const size_t n = steps.size();
  if (n < 3) return 0;
  const double x_mean = double(n - 1) / 2;
  double y_mean = 0;
  for (const StepFigures& f : steps) y_mean += double(f.start_bytes);
  y_mean /= double(n);
  double sxy = 0, sxx = 0;
  for (size_t j = 0; j < n; ++j) {
    sxy += (double(j) - x_mean) * (double(steps[j].start_bytes) - y_mean);
    sxx += (double(j) - x_mean) * (double(j) - x_mean);
  }
  return sxy / sxx;
}

}  // namespace

std::optional<StepFigures> step_under_way(const StepHistory& h, const LiveByKey& live) {
  if (h.recorded == 0) return std::nullopt;
  StepFigures current = h.current;
  current.peak_bytes = std::max(current.start_bytes, live.step_peak_bytes);
  current.end_bytes = live.live_bytes;
  return current;
}

std::optional<StepFigures> current_step_figures(const StepHistory& h, const LiveByKey& live) {
  if (h.figures.size() >= kKeptStepFigures) return std::nullopt;
  return step_under_way(h, live);
}

std::vector<StepFigures> step_figures_between(const StepHistory& h, const LiveByKey& live,
                                              int64_t t0_ns, int64_t t1_ns) {
  std::vector<StepFigures> out;
  for (const std::vector<StepFigures>* kept : {&h.figures, &h.recent}) {
    for (const StepFigures& f : *kept) {
      if (f.start_ns <= t1_ns) out.push_back(f);
    }
  }
  if (auto current = step_under_way(h, live); current && current->start_ns <= t1_ns) {
    out.push_back(*current);
  }
  // By time (a file's steps may come in any order); of those before t0, only the latest:
  // the step under way as the range began.
  const auto earlier = [](const StepFigures& a, const StepFigures& b) {
    return a.start_ns < b.start_ns;
  };
  std::stable_sort(out.begin(), out.end(), earlier);
  auto first = std::lower_bound(out.begin(), out.end(), StepFigures{0, t0_ns}, earlier);
  if (first != out.begin()) --first;
  out.erase(out.begin(), first);
  return out;
}

void record_step_boundary(StepHistory& h, const LiveByKey& live, uint64_t step, int64_t ts_ns) {
  const uint64_t b = step;
  if (auto finished = step_under_way(h, live)) {
    if (h.figures.size() < kKeptStepFigures) {
      h.figures.push_back(*finished);
    } else if (h.recent.size() < kRecentStepFigures) {
      h.recent.push_back(*finished);
    } else {
      h.recent[h.recent_next] = *finished;
      h.recent_next = (h.recent_next + 1) % kRecentStepFigures;
    }
  }
  h.current = {step, ts_ns, live.live_bytes, live.live_bytes, live.live_bytes};
  const bool first = ++h.recorded == 1;
  const int64_t previous_ts_ns = h.last_boundary_ts_ns;
  h.last_step = step;
  h.last_boundary_ts_ns = ts_ns;
  h.pairs_at_last_step = live.live[kByOwnerStack];
  const size_t w = h.window + 1;
  for (int d = 0; d < 2; ++d) {
    const std::vector<KeyBytes>& now = live.live[kHistoryDims[d]];
    const size_t old = h.min_bytes[d].size();
    if (now.size() > old) {
      // Keys first seen since the previous boundary had 0 bytes at every earlier one.
      h.ring[d].resize(now.size() * w, 0);
      h.min_bytes[d].resize(now.size(), first ? std::numeric_limits<int64_t>::max() : 0);
      h.min_boundary[d].resize(now.size(), first ? 0 : b - 1);
      h.min_boundary_ts_ns[d].resize(now.size(), first ? kNoTime : previous_ts_ns);
    }
    for (size_t k = 0; k < now.size(); ++k) {
      const int64_t v = clamp_to_int64(now[k].bytes);
      h.ring[d][k * w + b % w] = v;
      // "<=": the last boundary at the lowest value is where the growth that followed began.
      if (v <= h.min_bytes[d][k]) {
        h.min_bytes[d][k] = v;
        h.min_boundary[d][k] = b;
        h.min_boundary_ts_ns[d][k] = ts_ns;
      }
    }
  }
}

void trend_update(LiveTrend& t, int64_t ts_ns, double value) {
  if (t.t0_ns == kNoTime) {
    t.t0_ns = ts_ns;
    t.last_ts_ns = ts_ns;
    t.last_value = value;
    return;
  }
  if (ts_ns > t.last_ts_ns) {
    // Both at or after t0, so the unsigned differences are exact; the signed ones overflowed
    // for times a sender made up at both ends of int64's range.
    const double a = double(uint64_t(t.last_ts_ns) - uint64_t(t.t0_ns)) * 1e-9;
    const double b = double(uint64_t(ts_ns) - uint64_t(t.t0_ns)) * 1e-9;
    const double dt = b - a;
    // Integrals over [a, b) of 1, t, t^2, y and t*y with y constant, written as products of
    // (b - a) so that no difference of two large cubes loses the precision.
    t.s0 += dt;
    t.s1 += dt * (a + b) / 2;
    t.s2 += dt * (a * a + a * b + b * b) / 3;
    t.sy += t.last_value * dt;
    t.sty += t.last_value * dt * (a + b) / 2;
    t.last_ts_ns = ts_ns;
  }
  t.last_value = value;
}

double trend_slope(LiveTrend t, int64_t now_ns) {
  if (t.t0_ns == kNoTime) return 0;
  trend_update(t, now_ns, t.last_value);
  const double den = t.s0 * t.s2 - t.s1 * t.s1;
  if (!(den > 0)) return 0;
  return (t.s0 * t.sty - t.s1 * t.sy) / den;
}

LeakResult leak_result(const StepHistory& h, const LiveByKey& live, const LiveTrend& trend,
                       const KeyIndex& keys, const StringTable& strings, const LeakOptions& o,
                       size_t top_n, int64_t now_ns) {
  LeakResult r;
  r.steps = h.recorded;
  const uint64_t complete = h.recorded > 0 ? h.recorded - 1 : 0;
  r.step_based = complete >= std::max<size_t>(o.min_steps, 1);
  r.last_step_ns = h.last_boundary_ts_ns;
  if (r.step_based) {
    const size_t n = size_t(std::min<uint64_t>(complete, h.window));
    r.owner_suspects = suspects(h, 0, keys, strings, o, n, top_n);
    r.stack_suspects = suspects(h, 1, keys, strings, o, n, top_n);
  }
  r.alive_bytes = live.live_bytes;
  r.alive_blocks = live.live_blocks;
  r.alive_by_stack = alive_groups(live.live[kByStack], keys, strings, kByStack, top_n);
  r.alive_by_owner = alive_groups(live.live[kByOwner], keys, strings, kByOwner, top_n);
  // Each owner with the stacks that hold its bytes: now for what is live at the end, at the
  // last step (where the suspects' last_bytes are) for a leaking one.
  for (AliveGroup& g : r.alive_by_owner) {
    g.stacks = owner_top_stacks(live.live[kByOwnerStack], keys, strings, g.key, live.live_bytes,
                                kTopStacksPerOwner);
  }
  for (LeakSuspect& s : r.owner_suspects) {
    s.stacks = owner_top_stacks(h.pairs_at_last_step, keys, strings, s.key, h.current.start_bytes,
                                kTopStacksPerOwner);
  }
  r.alive_by_name = alive_groups(live.live[kByName], keys, strings, kByName, top_n);
  r.trend_bytes_per_s = trend_slope(trend, now_ns);
  r.trend_span_ns = trend.t0_ns == kNoTime ? 0 : saturating_sub(now_ns, trend.t0_ns);
  r.step_figures = h.figures;
  if (auto current = current_step_figures(h, live)) r.step_figures.push_back(*current);
  r.live_bytes_per_step = boundary_slope(r.step_figures);
  return r;
}

}  // namespace memtap::blocks
