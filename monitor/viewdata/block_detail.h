// What the detail panel says about one block: its size, layer, owner, operator (Name),
// allocation and free times, lifetime, thread, allocation_id and both call stacks, with the
// recording's names for each field.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "monitor/viewdata/block_index.h"

namespace memtap::viewdata {

struct BlockDetail {
  std::string title;                                        // "Block 12: 64.0 MiB PTA on device 0"
  std::vector<std::pair<std::string, std::string>> fields;  // label, value
  std::string stack_python;                                 // "" when none
  std::string stack_c;
};

// Times are given since `origin_ns` ("+1.234 s"); a live block's lifetime runs to `now_ns`.
BlockDetail block_detail(const BlockRow& b, int64_t origin_ns, int64_t now_ns);

// "+1.234 s": a time since the session's start, as ViewState::timeText writes it.
std::string since_start_text(int64_t ns, int64_t origin_ns);

}  // namespace memtap::viewdata
