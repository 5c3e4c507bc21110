// The findings panel's list: what `memtap report` tells about one process on one device
// (the Allocated peak, device OOMs, leak suspects by step, the worst fragmentation,
// inefficient blocks, time to OOM), each with the moment, the range and the blocks it is about, so
// the window can take the user there. Nothing is analysed again: the words come from the engine's
// DeviceReport (Analyzer::device_report), the report's own numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "monitor/viewdata/block_index.h"
#include "monitor/viewdata/data_source.h"

namespace memtap::viewdata {

enum class FindingKind : uint8_t {
  kPeak,           // the Allocated peak and what held it
  kLeak,           // an owner or stack that grows step after step; without steps, what
                   // was never freed
  kFragmentation,  // reserved far above allocated
  kInefficient,    // lazy_used / delayed_free / long_idle blocks (the worst one)
  kOom,            // an allocation that failed for lack of device memory, or sustained
                   // growth toward the capacity
  kClean,          // none of the above was found
};

// A block a finding is about, as the engine knows it; the window's block index finds its id
// (find_finding_block).
struct FindingBlock {
  uint64_t addr = 0;
  int64_t alloc_ns = 0;
  uint64_t size_bytes = 0;
};

struct Finding {
  FindingKind kind = FindingKind::kClean;
  std::string title;        // one line: "Leak suspect: owner model.cache"
  std::string detail;       // the numbers behind it
  int64_t t_ns = 0;         // the moment it is about (epoch ns); 0: none
  int64_t range_t0_ns = 0;  // the stretch of time it is about; both 0: none
  int64_t range_t1_ns = 0;
  std::optional<FindingBlock> block;
  // What the block table should filter by (an owner, a stack's first line); nullopt: leave
  // the filter as it is.
  std::optional<std::string> block_filter;
  int64_t bytes = 0;  // how much it is about
  std::string view;   // the view that shows it best (window_options.h's names); "": none
};

// The findings of (pid, device) as the engine stands; empty while it has no memory event of
// that scope. A run with nothing to report gets its peak and one kClean finding. `running`:
// the process has not ended (live), and what it holds is "live now", not "at the end".
std::vector<Finding> compute_findings(const EngineView& engine, uint32_t pid, int32_t device,
                                      bool running = false);

// The block index's id of a finding's block (nullopt when the index does not have it).
std::optional<int64_t> find_finding_block(BlockQueries& blocks, uint32_t pid, int32_t device,
                                          const FindingBlock& block);

// A filter's text for a key that may be a multi-line stack: its first line.
std::string filter_text(const std::string& key);

}  // namespace memtap::viewdata
