// See step_marks_data.h.
#include "monitor/viewdata/step_marks_data.h"

#include <algorithm>
#include <cstdint>

#include "monitor/engine/blocks/block_analyzer.h"
#include "monitor/engine/step_marks.h"
#include "monitor/report/units.h"

namespace memtap::viewdata {

namespace {

TimeMark time_mark(const StepMark& m, const StringTable& strings) {
  return {m.ts_ns, m.number, m.name != 0 ? strings.get(m.name) : std::string()};
}

// A step's peak where the engine kept its figures (in time order): a step's figures
// begin at its STEP event, as its mark does.
void add_step_peak(const std::vector<blocks::StepFigures>& figures, TimeMark* step) {
  if (step->number == 0) return;
  const auto f = std::lower_bound(
      figures.begin(), figures.end(), step->ts_ns,
      [](const blocks::StepFigures& f, int64_t ts_ns) { return f.start_ns < ts_ns; });
  if (f == figures.end() || f->start_ns != step->ts_ns) return;
  step->peak_bytes = int64_t(std::min<uint64_t>(f->peak_bytes, INT64_MAX));
}

// Every entry in [span.first, span.last), or, with min_gap_ns > 0, the first and then each
// one at least min_gap_ns after the one kept before it: crowded ones are left out where
// they crowd, not across the whole range.
std::vector<TimeMark> spaced(const StepMarkTrack& track, StepMarkSpan span, double min_gap_ns,
                             const StringTable& strings) {
  std::vector<TimeMark> out;
  double last = 0;
  for (size_t i = span.first; i < span.last; ++i) {
    const StepMark& m = track.kept[i];
    if (min_gap_ns > 0 && !out.empty() && double(m.ts_ns) - last < min_gap_ns) continue;
    out.push_back(time_mark(m, strings));
    last = double(m.ts_ns);
  }
  return out;
}

// Whether the steps whose number is a multiple of `stride` lie at least min_gap_ns apart.
bool spaced_at(const std::vector<TimeMark>& steps, uint64_t stride, double min_gap_ns) {
  const TimeMark* last = nullptr;
  for (const TimeMark& s : steps) {
    if (s.number % stride != 0) continue;
    if (last && double(s.ts_ns) - double(last->ts_ns) < min_gap_ns) return false;
    last = &s;
  }
  return true;
}

// The first of data.steps to begin after t_ns.
std::vector<TimeMark>::const_iterator first_after(const StepMarksData& data, int64_t t_ns) {
  return std::upper_bound(data.steps.begin(), data.steps.end(), t_ns,
                          [](int64_t t, const TimeMark& m) { return t < m.ts_ns; });
}

}  // namespace

uint64_t round_at_least(uint64_t n) {
  for (uint64_t power = 1; power <= UINT64_MAX / 50; power *= 10) {
    for (uint64_t m : {1, 2, 5}) {
      if (m * power >= n) return m * power;
    }
  }
  return n;  // past 10^18: no rounder number is there to take
}

StepMarksData compute_step_marks(const EngineView& engine, uint32_t pid, int32_t device,
                                 int64_t t0_ns, int64_t t1_ns, size_t columns) {
  StepMarksData out;
  if (t1_ns < t0_ns) return out;
  columns = std::max<size_t>(columns, 1);
  const StepMarks& all = engine.analyzer.step_marks();
  // In doubles: a file's times can be anything, and their difference overflow.
  const double column_ns = (double(t1_ns) - double(t0_ns)) / double(columns);
  if (const StepMarkTrack* steps = all.steps(pid)) {
    if (const StepMark* before = step_mark_at(*steps, t0_ns > INT64_MIN ? t0_ns - 1 : t0_ns)) {
      out.step_before = time_mark(*before, engine.strings);
    }
    const StepMarkSpan span = step_marks_between(*steps, t0_ns, t1_ns);
    if (span.last < steps->kept.size()) {
      out.step_after = time_mark(steps->kept[span.last], engine.strings);
    }
    const size_t count = span.last - span.first;
    out.steps_in_range = count * steps->stride;
    const double min_gap_ns = double(kStepSpacingColumns) * column_ns;
    if (steps->stride == 1 && count <= columns * kListedStepsPerColumn) {
      out.steps = spaced(*steps, span, 0, engine.strings);
      // Bounded: a file's step numbers are anything (two steps named 0 are on every stride).
      bool spaced_out = false;
      for (int round = 0; round < 40 && !spaced_out; ++round) {
        spaced_out = spaced_at(out.steps, out.step_stride, min_gap_ns);
        if (!spaced_out) out.step_stride = round_at_least(out.step_stride + 1);
      }
      const bool none_on_stride =
          std::none_of(out.steps.begin(), out.steps.end(),
                       [&](const TimeMark& m) { return m.number % out.step_stride == 0; });
      out.first_alone = !out.steps.empty() && (!spaced_out || none_on_stride);
    } else {
      out.every_step = false;
      out.steps = spaced(*steps, span, min_gap_ns, engine.strings);
    }
    if (out.every_step) {
      const std::vector<blocks::StepFigures> figures =
          engine.analyzer.blocks().step_figures(pid, device, t0_ns, t1_ns);
      add_step_peak(figures, &out.step_before);
      for (TimeMark& step : out.steps) add_step_peak(figures, &step);
    }
  }
  if (const StepMarkTrack* marks = all.marks(pid)) {
    const StepMarkSpan span = step_marks_between(*marks, t0_ns, t1_ns);
    out.marks_in_range = (span.last - span.first) * marks->stride;
    out.marks = spaced(*marks, span, double(kMarkSpacingColumns) * column_ns, engine.strings);
  }
  out.ranges = compute_range_bars(all.ranges(pid), engine.strings, t0_ns, t1_ns, columns);
  for (const blocks::Oom& oom : engine.analyzer.blocks().ooms(pid, device).kept) {
    if (oom.ts_ns < t0_ns || oom.ts_ns > t1_ns) continue;
    std::string text = engine.strings.get(oom.name);
    if (text.empty()) text = "allocation";
    text += " asked " + bytes_text(double(oom.requested_bytes));
    out.ooms.push_back({oom.ts_ns, 0, std::move(text)});
  }
  return out;
}

const TimeMark* step_at(const StepMarksData& data, int64_t t_ns) {
  return data.every_step ? steps_around(data, t_ns).before : nullptr;
}

StepsAround steps_around(const StepMarksData& data, int64_t t_ns) {
  const auto after = first_after(data, t_ns);
  return {after == data.steps.begin() ? &data.step_before : &*(after - 1),
          after != data.steps.end() ? &*after : &data.step_after};
}

bool step_span_at(const StepMarksData& data, int64_t t_ns, int64_t range_end_ns, int64_t* begin_ns,
                  int64_t* end_ns) {
  const TimeMark* step = step_at(data, t_ns);
  if (step == nullptr || step->number == 0) return false;
  *begin_ns = step->ts_ns;
  if (const auto next = first_after(data, t_ns); next != data.steps.end()) {
    *end_ns = next->ts_ns;
  } else if (data.step_after.number != 0) {
    *end_ns = data.step_after.ts_ns;
  } else {
    *end_ns = range_end_ns;
  }
  return *end_ns > *begin_ns;
}

bool step_drawn(const StepMarksData& data, const TimeMark& step) {
  if (data.first_alone) return &step == &data.steps.front();
  return !data.every_step || data.step_stride <= 1 || step.number % data.step_stride == 0;
}

}  // namespace memtap::viewdata
