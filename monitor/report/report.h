// What `memtap report` (and the end of `memtap run`) tells: plain data filled by the
// analyzer from the engine's analyses, rendered as text or JSON by report_text/report_json.
// Byte counts are int64 (a FREE-before-MALLOC recording can make a running total dip); a
// figure the recording cannot give is kUnknown (-1) or an empty list, and the renderers
// say so instead of printing zeros.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/model/mem_event.h"
#include "monitor/model/torch_snapshot_facts.h"

namespace memtap {

struct CurveSummary {
  std::string name;  // Allocated, Reserved, Active, App Reserved
  int64_t peak_ns = kUnknown;
  int64_t peak_bytes = kUnknown;
  int64_t final_bytes = kUnknown;
};

// One layer's live bytes on the device over the session: on a GPU, HAL is what the CUDA
// runtime and driver gave the process, PTA what the framework's blocks hold of it.
struct LayerSummary {
  std::string layer;  // as the recording spells it (layer_name): HAL, PTA, HOST, HOST mmap, ...
  int64_t peak_ns = kUnknown;
  int64_t peak_bytes = kUnknown;
  int64_t final_bytes = kUnknown;
};

struct BreakdownEntry {
  std::string key;  // owner, stack (first frame line) or operator name; "" shown as (none)
  int64_t bytes = 0;
  int64_t blocks = 0;
  double share = 0;  // of the peak
  // An owner's entry: the stacks that hold most of its bytes, largest first (share: of the
  // same whole as the owner's). Empty for stacks and names.
  std::vector<BreakdownEntry> top_stacks{};
};

struct PeakSection {
  int64_t ts_ns = kUnknown;
  int64_t bytes = kUnknown;
  std::vector<BreakdownEntry> by_owner, by_stack, by_name;
};

struct LeakSuspect {
  std::string what;  // "owner" or "stack"
  std::string key;
  double bytes_per_step = 0;
  int64_t first_step = -1;
  int64_t live_bytes = 0;                    // at the last step
  int64_t growth_start_ns = kUnknown;        // when first_step began
  int64_t last_step_ns = kUnknown;           // the last step boundary (live_bytes are there)
  std::vector<BreakdownEntry> top_stacks{};  // an owner's: the stacks holding most of it now
};

struct LeakSection {
  int64_t steps = 0;  // SYSTEM STEP markers seen; 0: the fallback below applies
  std::vector<LeakSuspect> suspects;
  std::vector<BreakdownEntry> alive_at_end;  // without steps: what was never freed, by stack
  // The same blocks by owner and by operator name (for `memtap diff` and `memtap check`,
  // which name who holds what; the text report shows the stacks).
  std::vector<BreakdownEntry> alive_at_end_by_owner, alive_at_end_by_name;
  double trend_bytes_per_s = 0;  // growth of live bytes over the session
  // With steps: how much each step leaves live (least-squares slope of live bytes at the
  // step boundaries); 0 with fewer than 3 steps.
  double live_bytes_per_step = 0;
};

// One step of the process on the device (SYSTEM STEP markers): live bytes (Allocated) when
// it began, the most while it ran, and when the next began (the last step: at the end).
struct StepSummary {
  int64_t step = 0;  // 1-based, as the markers count
  int64_t start_ns = kUnknown;
  int64_t start_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t end_bytes = 0;
};

// The widest gap between Reserved and Allocated when memory was asked for (worst_ns, with
// the two curves then), and, where segments are known, the pool's largest free gap at its own
// worst moment (largest_free_gap_ns: the most free bytes a single request could not use when
// the pool had to grow or a step began), which may be another instant.
struct FragmentationSection {
  int64_t worst_ns = kUnknown;
  int64_t reserved = kUnknown;
  int64_t allocated = kUnknown;
  int64_t largest_free_gap = kUnknown;
  int64_t final_gap = kUnknown;  // reserved - allocated at the end
  int64_t largest_free_gap_ns = kUnknown;
};

// "largest free gap 128.0 MiB", with " (at +1.250 s)" when measured at another instant than
// worst_ns (as printed: to the millisecond); "" when unknown.
std::string largest_free_gap_text(const FragmentationSection& f, int64_t origin_ns);

struct InefficientBlock {
  std::string category;  // lazy_used, delayed_free, long_idle
  uint64_t addr = 0;
  int64_t size_bytes = 0;
  std::string owner, name;
  int64_t wasted_ns = 0;
  int64_t alloc_ns = kUnknown;
  int64_t gap_start_ns = kUnknown;  // when the wasted interval began
};

struct InefficientSection {
  bool has_usage_events = false;  // ACCESS or operator events: without them, nothing to say
  int64_t lazy_used = 0, delayed_free = 0, long_idle = 0;  // block counts
  int64_t lazy_used_bytes = 0, delayed_free_bytes = 0, long_idle_bytes = 0;
  std::vector<InefficientBlock> top;
};

struct ScopeEntry {
  std::string kind;  // owner, operator, range
  std::string name;
  int64_t occurrences = 0;
  int64_t inclusive_bytes = 0;
  int64_t exclusive_bytes = 0;
  int64_t peak_bytes = 0;  // most live bytes allocated inside it at any moment
};

struct OomSection {
  bool sustained_growth = false;
  double growth_bytes_per_s = 0;
  int64_t capacity_bytes = kUnknown;
  double seconds_to_oom = -1;  // only with sustained growth and a known capacity
  // Sustained growth whose capacity lies further ahead than a forecast may reach from the
  // time recorded (OomOptions::max_extrapolation): when it would come at this rate.
  bool too_early = false;
  double seconds_at_rate = -1;
};

// A block live on the device when an allocation failed (an OOM_TOP_ALLOC row).
struct OomBlockEntry {
  uint64_t addr = 0;
  int64_t size_bytes = 0;
  uint64_t allocation_id = 0;
  std::string owner;
  std::string name;  // the operator that allocated it, or the API
  std::string stack_python, stack_c;
};

// An allocation that failed for lack of device memory (OOM_TRIGGER), with the largest blocks
// live on the device then, largest first.
struct OomEntry {
  int64_t ts_ns = kUnknown;
  uint32_t tid = 0;
  std::string api;  // the call that failed: cudaMalloc, cuMemAlloc_v2, ...
  int64_t requested_bytes = 0;
  uint64_t stream = 0;
  std::string stack_python, stack_c;
  // The failed calls of this request: PyTorch's allocator asks again after giving its cache
  // back (blocks::kRefusedAgainNs), and `top` is what was live at the last of them.
  uint32_t refusals = 1;
  int64_t last_ts_ns = kUnknown;
  std::vector<OomBlockEntry> top;
};

// A device's framework pool (layer PTA, docs/design-notes.md, agent/python "Framework pool"): where
// its figures come from and the three curves that describe it (the device's curves, named again: on
// such a device they are the pool's).
struct PoolSection {
  // "blocks": the pool reported its blocks (PTA MALLOC/FREE); "samples": only its figures
  // (pool SNAPSHOTs, e.g. torch.cuda.memory_stats() at each step), which Allocated and
  // Reserved follow; "": no pool was recorded on the device (the host, a driver-only GPU).
  std::string source;
  CurveSummary allocated, reserved, active;
  uint64_t snapshots = 0;  // pool SNAPSHOTs
  // The largest peaks the pool itself reported in its SNAPSHOTs (torch.cuda.memory_stats()'s
  // allocated_bytes.all.peak, reserved_bytes.all.peak): what it held inside the steps, between
  // the samples. kUnknown where it reported none.
  int64_t max_allocated = kUnknown;
  int64_t max_reserved = kUnknown;
  uint64_t pending_frees = 0;  // frees that waited for another stream (Active > Allocated)
  int64_t pending_bytes = 0;   // still waiting at the end
};

// One process on one device.
struct DeviceReport {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  int64_t start_ns = kUnknown, end_ns = kUnknown;  // its first and last event
  // What its times ("+1.234 s") count from: the session's first event, whichever process and
  // device it came from, as the window's time axis does; so a GPU peak reads the same
  // "+s" in the report, in `memtap check` and in the window, and beside the host's.
  int64_t origin_ns = kUnknown;
  // What was allocated over the session: on a device whose framework pool reported its
  // blocks (pool.source "blocks"), those blocks; else every layer's.
  uint64_t allocations = 0, frees = 0;
  int64_t bytes_allocated = 0;
  // On a pool's device, the driver's allocations (HAL) that hold the blocks: counted apart,
  // as adding them counted every tensor twice (a snapshot's "69.3 GiB allocated" was 13.2 GiB
  // of segments and 56.1 GiB of blocks inside them).
  uint64_t driver_allocations = 0;
  int64_t driver_bytes_allocated = 0;
  std::vector<CurveSummary> curves;
  std::vector<LayerSummary> layers;  // each layer the device's blocks came from
  PoolSection pool;
  PeakSection peak;
  LeakSection leaks;
  FragmentationSection fragmentation;
  InefficientSection inefficient;
  std::vector<ScopeEntry> scopes;
  // Each step's figures, the first 1000 steps (blocks::kKeptStepFigures); empty without
  // step markers. For `memtap diff`, which lines two runs' steps up by number.
  std::vector<StepSummary> step_figures;
  OomSection oom;              // time to OOM, from the growth
  uint64_t oom_count = 0;      // OOMs that happened
  std::vector<OomEntry> ooms;  // the first of them (blocks::kKeptOoms), in time order
};

// The device's curve of that name (CurveSummary::name: "Allocated", ...), or null.
inline const CurveSummary* find_curve(const DeviceReport& d, std::string_view name) {
  for (const CurveSummary& c : d.curves) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

struct Report {
  std::string source;       // the file, or "live"
  std::string format;       // memscope_dump, leaks_dump, msmemscope_csv, ...
  bool unfinished = false;  // Recording::unfinished: a cut recording
  // Where the recording stopped while the session went on (Recording::stopped, or the live
  // writer's): reason "" when it did not.
  RecordingStop stopped;
  uint64_t events = 0;
  uint64_t rows_skipped = 0;
  LiveInput live_input;               // what the live monitor refused, when the recording says
  TorchSnapshotFacts torch_snapshot;  // a PyTorch snapshot's made-up times, blocks before it
  std::vector<RecordedProcess> processes;
  std::vector<DeviceReport> devices;
};

}  // namespace memtap
