// See step_marks.h.
#include "monitor/engine/step_marks.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <system_error>

namespace memtap {

namespace {

// The comparisons lower_bound and upper_bound take, by time.
bool earlier(const StepMark& a, int64_t t_ns) {
  return a.ts_ns < t_ns;
}
bool later(int64_t t_ns, const StepMark& a) {
  return t_ns < a.ts_ns;
}

}  // namespace

StepMarks::StepMarks(const StringTable* strings, size_t kept_per_kind)
    : strings_(strings), kept_per_kind_(std::max<size_t>(kept_per_kind, 2)) {}

void StepMarks::keep(StepMarkTrack& track, const StepMark& m) const {
  keep_thinned(track, m, kept_per_kind_, [](const StepMark& k) { return k.ts_ns; });
}

void StepMarks::add(const MemEvent& e) {
  if (e.kind != MemEventKind::kStep && e.kind != MemEventKind::kMark &&
      e.kind != MemEventKind::kRangeStart && e.kind != MemEventKind::kRangeEnd) {
    return;
  }
  Process& p = by_pid_[e.pid];
  if (e.kind == MemEventKind::kRangeStart)
    return range_started(p.ranges, e.ts_ns, e.name, kept_per_kind_);
  if (e.kind == MemEventKind::kRangeEnd) {
    return range_ended(p.ranges, e.ts_ns, e.name, kept_per_kind_);
  }
  if (e.kind == MemEventKind::kStep) {
    // The agent writes each step's number as the row's Name; another tool's Name may be
    // anything, and then the count stands in.
    StepMark m{e.ts_ns, p.steps.seen + 1, 0};
    const std::string& text = strings_->get(e.name);
    uint64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error == std::errc() && end == text.data() + text.size() && !text.empty())
      m.number = number;
    keep(p.steps, m);
    return;
  }
  keep(p.marks, StepMark{e.ts_ns, p.marks.seen + 1, e.name});
}

const StepMarkTrack* StepMarks::steps(uint32_t pid) const {
  auto it = by_pid_.find(pid);
  return it == by_pid_.end() || it->second.steps.seen == 0 ? nullptr : &it->second.steps;
}

const StepMarkTrack* StepMarks::marks(uint32_t pid) const {
  auto it = by_pid_.find(pid);
  return it == by_pid_.end() || it->second.marks.seen == 0 ? nullptr : &it->second.marks;
}

const RangeLanes* StepMarks::ranges(uint32_t pid) const {
  auto it = by_pid_.find(pid);
  if (it == by_pid_.end()) return nullptr;
  const RangeLanes& r = it->second.ranges;
  return r.lanes.empty() && r.open.empty() ? nullptr : &r;
}

StepMarkSpan step_marks_between(const StepMarkTrack& track, int64_t t0_ns, int64_t t1_ns) {
  const auto begin = track.kept.begin();
  const auto first = std::lower_bound(begin, track.kept.end(), t0_ns, earlier);
  const auto last = std::upper_bound(first, track.kept.end(), t1_ns, later);
  return {size_t(first - begin), size_t(last - begin)};
}

const StepMark* step_mark_at(const StepMarkTrack& track, int64_t t_ns) {
  const auto after = std::upper_bound(track.kept.begin(), track.kept.end(), t_ns, later);
  return after == track.kept.begin() ? nullptr : &*(after - 1);
}

}  // namespace memtap
