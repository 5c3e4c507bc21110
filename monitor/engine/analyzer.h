// The engine's front: MemEvents in (live rows or a recording, in time order), a Report out.
// It owns the analyses (timeline: curves, fragmentation over time, time to OOM; blocks:
// peak breakdown, leaks, pool state, inefficient blocks, scopes; the steps and marks on the
// time axis) and keeps the per-device counts a report opens with. One Analyzer serves `memtap run`,
// `report` and `replay`, so a replayed recording and the live run that wrote it give the same
// report.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "monitor/model/mem_event.h"
#include "monitor/report/report.h"

namespace memtap {

namespace timeline {
class Timeline;
}
namespace blocks {
class BlockAnalyzer;
}
class StepMarks;

struct AnalyzerOptions {
  size_t top_entries = 10;             // rows per breakdown / list in the report
  int64_t lazy_used_ns = 100'000'000;  // allocated this long before first use
  int64_t delayed_free_ns = 100'000'000;
  int64_t long_idle_ns = 1'000'000'000;
  int64_t capacity_bytes = kUnknown;  // every scope's, over what the recording says (OOM)
};

class Analyzer {
 public:
  // `strings` must outlive the analyzer and hold every id the events use.
  Analyzer(const StringTable* strings, AnalyzerOptions options = {});
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  void add(const MemEvent* events, size_t count);
  uint64_t events() const;

  Report report(const std::vector<RecordedProcess>& processes) const;
  // The report's section for one process and device (the window's findings panel), as
  // report() fills it. On the thread that adds events, between add() calls.
  DeviceReport device_report(uint32_t pid, int32_t device) const;

  // The analyses themselves, for the window's queries (curves, pool, breakdowns). Only on
  // the thread that adds events, between add() calls.
  const timeline::Timeline& timeline() const;
  const blocks::BlockAnalyzer& blocks() const;
  const StepMarks& step_marks() const;  // steps and marks over time (step_marks.h)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtap
