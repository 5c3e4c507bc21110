// What reading a PyTorch memory snapshot says about its events beyond the events
// themselves (docs/design-notes.md, monitor/store/reader/torch, "How a snapshot becomes events"):
// whether their times are the file's, and which blocks and segments the trace found already there.
// The reader fills it (Recording), `memtap report` says it (Report: one line, and `snapshot` in
// --json).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace memtap {

// The owner label of the blocks and segments that were live before the snapshot's trace
// began (in its segments at the dump, or freed in the trace, but never allocated in it):
// they are allocated at the trace's start under this owner.
inline constexpr const char* kBeforeTraceOwner = "before trace";

struct TorchSnapshotFacts {
  bool known = false;  // the recording is a PyTorch memory snapshot
  // The trace's entries have no time_us (torch 2.0), or there is no trace: the events' times
  // are made up, 1 ms apart in each device's trace order, from 1 s after the epoch.
  bool synthetic_time = false;
  uint64_t trace_entries = 0;  // in every device's trace
  // PTA blocks live when the trace began (owner kBeforeTraceOwner), and of those, the ones
  // the trace frees (a free, or a completion, of a block it never saw allocated).
  uint64_t blocks_before_trace = 0;
  uint64_t blocks_before_trace_freed = 0;
  uint64_t segments_before_trace = 0;  // segment ranges (HAL blocks) likewise
};

// The facts as memtap_meta rows, so that a snapshot imported into a database (`memtap
// import`) still says them when that database is read; none when not `known`.
inline std::vector<std::pair<std::string, std::string>> torch_snapshot_meta(
    const TorchSnapshotFacts& f) {
  if (!f.known) return {};
  return {{"torch_snapshot_synthetic_time", f.synthetic_time ? "1" : "0"},
          {"torch_snapshot_trace_entries", std::to_string(f.trace_entries)},
          {"torch_snapshot_blocks_before_trace", std::to_string(f.blocks_before_trace)},
          {"torch_snapshot_blocks_before_trace_freed", std::to_string(f.blocks_before_trace_freed)},
          {"torch_snapshot_segments_before_trace", std::to_string(f.segments_before_trace)}};
}

// One memtap_meta row read back into *f; false when the key is none of torch_snapshot_meta's.
inline bool torch_snapshot_from_meta(const std::string& key, const std::string& value,
                                     TorchSnapshotFacts* f) {
  const uint64_t n = strtoull(value.c_str(), nullptr, 10);
  if (key == "torch_snapshot_synthetic_time") {
    f->synthetic_time = n != 0;
  } else if (key == "torch_snapshot_trace_entries") {
    f->trace_entries = n;
  } else if (key == "torch_snapshot_blocks_before_trace") {
    f->blocks_before_trace = n;
  } else if (key == "torch_snapshot_blocks_before_trace_freed") {
    f->blocks_before_trace_freed = n;
  } else if (key == "torch_snapshot_segments_before_trace") {
    f->segments_before_trace = n;
  } else {
    return false;
  }
  f->known = true;
  return true;
}

}  // namespace memtap
