// Two runs compared (`memtap diff BASE NEW`): what got bigger, and where. Plain data
// computed from two Reports, no I/O; report_diff_render.h prints it.
//
// Devices pair as line_up pairs them (report_lineup.h). Within a pair every figure and
// every key of either run (owner, name, stack, scope, step) gets both values, the change
// and the percent; each list is ordered by the size of the change, largest first, and the
// headline names the largest changes of peak, leaks and live bytes at the end with who
// made them. "new" in JSON and text is `now` here (`new` being a keyword).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/report/report.h"

namespace memtap {

// What a figure counts, for printing it.
enum class DiffUnit { kBytes, kBytesPerSecond, kBytesPerStep, kSeconds, kCount };

// "bytes", "bytes_per_s", "bytes_per_step", "seconds", "count" (the JSON's "unit").
const char* diff_unit_name(DiffUnit unit);

// One figure or key in both runs.
struct Change {
  std::string key;  // the figure's name ("Allocated peak"), or the owner, name, stack, ...
  DiffUnit unit = DiffUnit::kBytes;
  // Whether each run has it: a key only one run lists is new or vanished; a figure one run
  // cannot tell (time to OOM without growth) is unknown there. A missing value counts as 0.
  bool in_base = false, in_now = false;
  double base = 0, now = 0;
  double delta = 0;    // now - base
  double percent = 0;  // delta / |base| x 100; NaN where base is 0 or missing
  // "same", "changed", "new", "vanished", or "unlisted": a key missing from a run whose
  // list was full (the report lists the largest N), so its value there is not known.
  std::string status;
};

// One step of the process (by its number) in both runs.
struct StepChange {
  int64_t step = 0;
  Change peak;  // the most live while it ran
  Change end;   // live when the next began (the last step: at the end)
};

// An owner or operator that only one run has, with the most bytes it held or allocated.
struct LoneKey {
  std::string kind;  // "owner" or "name"
  std::string key;
  double bytes = 0;
};

// One process on one device in both runs (or in one of them).
struct DeviceDiff {
  std::string label;  // line_up's: "rank 1, device 0", "process 1 (pid 10 / pid 20), cpu"
  bool in_base = false, in_now = false;
  uint32_t base_pid = 0, now_pid = 0;
  int32_t device = kNoDevice;
  // Bytes figures first, largest change first (curves' peaks and ends, bytes allocated,
  // fragmentation), then the others in a fixed order (counts, per step, growth, time to OOM).
  std::vector<Change> figures;
  // Who held the peak, and who held what was live at the end.
  std::vector<Change> peak_by_owner, peak_by_name, peak_by_stack;
  std::vector<Change> alive_by_owner, alive_by_name, alive_by_stack;
  // Leak suspects' growth per step (unit kBytesPerStep), by owner and by stack.
  std::vector<Change> leak_by_owner, leak_by_stack;
  // Bytes allocated inside each owner, operator and MSTX range (scopes' inclusive bytes).
  std::vector<Change> scope_owners, scope_operators, scope_ranges;
  // Steps of the same number, when both runs have step markers.
  std::vector<StepChange> steps;
  std::vector<LoneKey> appeared, vanished;  // owners and operators only one run has
};

// A headline: the largest change of one kind, where, and the keys that made it.
struct Cause {
  std::string kind;  // "owner", "name", "stack"
  Change change;
};
struct Finding {
  std::string what;    // "peak", "leak", "live at end", "OOMs"
  std::string device;  // the DeviceDiff's label
  Change change;
  std::vector<Cause> causes;  // the largest change of the same sign in each breakdown
};

struct RunSummary {
  std::string source, format;
  uint64_t events = 0;
  size_t processes = 0, devices = 0;
  bool unfinished = false;
};

struct ReportDiff {
  RunSummary base, now;
  bool by_rank = false;   // processes paired by rank, else by the order they started
  bool lined_up = false;  // at least one device is in both runs
  // What the reader must know before trusting the pairing: no device in common, different
  // commands or process counts, steps in one run only, an unfinished recording.
  std::vector<std::string> cautions;
  std::vector<Finding> headline;
  std::vector<DeviceDiff> devices;  // the device with the largest change first
};

struct DiffOptions {
  size_t top = 10;  // entries kept per list: the largest changes
  // How many entries the reports list per breakdown (AnalyzerOptions::top_entries): a key
  // missing from a list this long may just be below it ("unlisted"), not absent.
  size_t listed = 10;
  // A peak or end change smaller than this share of the larger value stays out of the
  // headline (noise between two runs of the same program).
  double headline_min_share = 0.01;
};

ReportDiff diff_reports(const Report& base, const Report& now, const DiffOptions& options = {});

}  // namespace memtap
