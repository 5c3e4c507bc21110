// `memtap check`'s judgement: a Report (and a baseline run's) held against thresholds, for
// CI. Pure: the command reads the files and prints; this says which thresholds a run
// breaks, per process and device, and who holds the memory that breaks them.
//
// Every threshold looks at each process's device on its own (a host and a GPU are not
// summed), and only at `device` when one is given. A threshold the recording cannot answer
// (leaks per step without step markers) and a recording that lacks events (dropped, lost,
// rows not understood, stopped early) are warnings: the checks then see less than happened,
// and a caller that wants certainty (--strict) fails on them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "monitor/report/report.h"

namespace memtap {

struct Thresholds {
  std::optional<int64_t> max_peak_bytes;           // the device's Peak (report's "Peak:")
  std::optional<int64_t> max_leak_per_step_bytes;  // any leak suspect's bytes per step
  std::optional<int64_t> max_growth_bytes;         // live bytes at the end minus at the start
  std::optional<double> max_fragmentation_pct;     // unused share of Reserved at its worst
  bool no_oom = false;                             // any failed allocation
  std::optional<double> max_peak_increase_pct;     // Peak above the baseline's, in percent
  std::optional<int32_t> device;                   // only this device (kHostDevice: cpu)
};

// How many thresholds are set (what "all N checks passed" counts).
int threshold_count(const Thresholds& t);

struct Violation {
  std::string check;  // the option: "max-peak", "max-leak-per-step", ..., "no-oom"
  // Which process and device: "pid 4711, device 0" ("pid 4711 (rank 1), host"); against a
  // baseline, line_up's label ("rank 1, device 0").
  std::string where;
  // What broke the threshold and who is responsible, one line: "peak 1.2 GiB at +3.100 s
  // is above --max-peak 1.0 GiB; largest at the peak: owner model@forward (900.0 MiB, 73%)".
  std::string text;
};

struct CheckResult {
  std::vector<Violation> violations;
  // One line each, without a prefix: "pid 4711: 1200 events dropped, ...".
  std::vector<std::string> warnings;
};

// Whether the report has a device the thresholds look at: false when `t.device` names one
// it lacks (nothing to check is the caller's usage error, not a pass).
bool has_checked_device(const Report& report, const Thresholds& t);

// `baseline` is only read for max_peak_increase_pct (nullptr: not checked).
CheckResult check_report(const Report& report, const Report* baseline, const Thresholds& t);

// What the recording lacks (events dropped or lost, rows not understood, messages the
// live monitor rejected, a recording stopped early or not finished), one line each; empty
// when it holds everything its processes sent.
std::vector<std::string> incomplete_recording(const Report& report);

}  // namespace memtap
