// See flame_data.h.
#include "monitor/viewdata/flame_data.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <iterator>
#include <map>

namespace memtap::viewdata {

namespace {

bool contains_nocase(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return false;
  const auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                              [](char a, char b) {
                                return std::tolower(static_cast<unsigned char>(a)) ==
                                       std::tolower(static_cast<unsigned char>(b));
                              });
  return it != haystack.end();
}

// Threads in order of their first span; spans grouped by thread in that order, then by
// depth and start (drawing and hit tests walk them so).
void order_spans(FlameData* data) {
  std::map<uint32_t, int64_t> first;
  for (const FlameSpan& s : data->spans) {
    auto [it, added] = first.emplace(s.thread_id, s.start_ns);
    if (!added) it->second = std::min(it->second, s.start_ns);
  }
  data->threads.clear();
  for (const auto& [tid, start] : first) data->threads.push_back(tid);
  std::stable_sort(data->threads.begin(), data->threads.end(),
                   [&](uint32_t a, uint32_t b) { return first[a] < first[b]; });
  std::map<uint32_t, size_t> rank;
  for (size_t i = 0; i < data->threads.size(); ++i) rank[data->threads[i]] = i;
  std::sort(data->spans.begin(), data->spans.end(), [&](const FlameSpan& a, const FlameSpan& b) {
    const size_t ra = rank[a.thread_id], rb = rank[b.thread_id];
    if (ra != rb) return ra < rb;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.start_ns < b.start_ns;
  });
}

}  // namespace

std::vector<int> thread_depths(const FlameData& data) {
  std::vector<int> depths(data.threads.size(), 0);
  for (const FlameSpan& s : data.spans) {
    const auto it = std::find(data.threads.begin(), data.threads.end(), s.thread_id);
    if (it == data.threads.end()) continue;
    int& d = depths[size_t(it - data.threads.begin())];
    d = std::max(d, s.depth + 1);
  }
  return depths;
}

void nest_trace_spans(FlameData* data) {
  std::vector<FlameSpan>& spans = data->spans;
  // Per thread, by start, the longer first: a parent comes before the children it holds.
  std::sort(spans.begin(), spans.end(), [](const FlameSpan& a, const FlameSpan& b) {
    if (a.thread_id != b.thread_id) return a.thread_id < b.thread_id;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  std::vector<int64_t> open_ends;  // the ends of the spans enclosing the current one
  uint32_t thread = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i == 0 || spans[i].thread_id != thread) {
      open_ends.clear();
      thread = spans[i].thread_id;
    }
    while (!open_ends.empty() && open_ends.back() <= spans[i].start_ns) open_ends.pop_back();
    spans[i].depth = int(open_ends.size());
    open_ends.push_back(spans[i].end_ns);
  }
  order_spans(data);
}

void merge_samples(const std::vector<FlameSample>& samples, int64_t min_width_ns, FlameData* data) {
  min_width_ns = std::max<int64_t>(min_width_ns, 1);
  // Per thread: the spans open at each depth (indexes in data->spans), and those frames.
  struct Open {
    std::vector<size_t> spans;
  };
  std::map<uint32_t, Open> open;
  for (const FlameSample& s : samples) {
    Open& o = open[s.thread_id];
    size_t same = 0;
    while (same < o.spans.size() && same < s.frames.size() &&
           data->spans[o.spans[same]].function == s.frames[same].first) {
      ++same;
    }
    const int64_t end = s.ts_ns + min_width_ns;
    for (size_t d = 0; d < same; ++d) {
      FlameSpan& span = data->spans[o.spans[d]];
      span.end_ns = std::max(span.end_ns, end);
      ++span.samples;
    }
    o.spans.resize(same);
    for (size_t d = same; d < s.frames.size(); ++d) {
      FlameSpan span;
      span.start_ns = s.ts_ns;
      span.end_ns = end;
      span.thread_id = s.thread_id;
      span.depth = int(d);
      span.function = s.frames[d].first;
      span.line = s.frames[d].second;
      span.samples = 1;
      o.spans.push_back(data->spans.size());
      data->spans.push_back(span);
    }
  }
  order_spans(data);
}

void drop_traced_samples(const FlameData& data, std::vector<FlameSample>* samples) {
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> traced;
  for (const FlameSpan& s : data.spans) {
    if (s.depth == 0 && s.samples == 0) traced[s.thread_id].push_back({s.start_ns, s.end_ns});
  }
  if (traced.empty()) return;
  for (auto& [tid, spans] : traced) std::sort(spans.begin(), spans.end());
  const auto inside = [&](const FlameSample& sample) {
    const auto it = traced.find(sample.thread_id);
    if (it == traced.end()) return false;
    // Outermost slices of a thread do not overlap: the one starting last at or before ts.
    const auto after = std::upper_bound(it->second.begin(), it->second.end(),
                                        std::make_pair(sample.ts_ns, INT64_MAX));
    return after != it->second.begin() && std::prev(after)->second >= sample.ts_ns;
  };
  for (FlameSample& sample : *samples) {
    if (inside(sample)) sample.frames.clear();
  }
}

void bound_spans(FlameData* data, size_t max_spans) {
  std::vector<FlameSpan>& spans = data->spans;
  if (spans.size() <= max_spans) return;
  // Widest first; among equals the shallower, so a parent as wide as its child stays too.
  std::nth_element(spans.begin(), spans.begin() + long(max_spans), spans.end(),
                   [](const FlameSpan& a, const FlameSpan& b) {
                     const int64_t wa = a.end_ns - a.start_ns, wb = b.end_ns - b.start_ns;
                     if (wa != wb) return wa > wb;
                     return a.depth < b.depth;
                   });
  spans.resize(max_spans);
  data->truncated = true;
  order_spans(data);
}

FlameMatches search_spans(const FlameData& data, std::string_view needle) {
  FlameMatches m;
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> covered;
  for (size_t i = 0; i < data.spans.size(); ++i) {
    const FlameSpan& s = data.spans[i];
    if (s.function >= data.functions.size()) continue;
    if (!contains_nocase(data.functions[s.function].function, needle)) continue;
    m.spans.push_back(i);
    // Only the part inside the range counts: that is what the total speaks of.
    const int64_t a = std::max(s.start_ns, data.t0_ns), b = std::min(s.end_ns, data.t1_ns);
    if (b > a) covered[s.thread_id].push_back({a, b});
  }
  for (auto& [tid, intervals] : covered) {
    std::sort(intervals.begin(), intervals.end());
    int64_t start = intervals[0].first, end = intervals[0].second;
    for (const auto& [a, b] : intervals) {
      if (a > end) {
        m.total_ns += end - start;
        start = a;
      }
      end = std::max(end, b);
    }
    m.total_ns += end - start;
  }
  return m;
}

}  // namespace memtap::viewdata
