// The device OOMs of a recording, per (process, device): each failed allocation
// (OOM_DETAIL OOM_TRIGGER) with the blocks its OOM_TOP_ALLOC rows name, as `memtap report`
// lists them.
//
// An OOM_TOP_ALLOC row belongs to the latest OOM_TRIGGER of its process and device (the
// engine writes them right after it, at its time; msMemScope does the same). The first
// kKeptOoms of a device are kept with at most kKeptOomBlocks blocks each and the rest only
// counted, so a program that fails again and again (a retry loop) cannot grow the memory.
//
// A request refused again is one OOM, not two: PyTorch's caching allocator, refused by the
// driver, gives its cached segments back and asks again for the same bytes before it raises
// (on an H200 the second cudaMalloc came 10 ms after the first; with expandable segments the
// second cuMemCreate 360-450 ms after, the pages unmapped one by one). So a failed call of the
// same thread, API, size and stream within kRefusedAgainNs of the last refusal counts as that
// OOM refused again, and the blocks listed are those live at its last refusal: what the
// program held when it was finally refused. Every row stays in the recording.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "monitor/model/mem_event.h"

namespace memtap::blocks {

inline constexpr size_t kKeptOoms = 16;
inline constexpr size_t kKeptOomBlocks = 100;
inline constexpr int64_t kRefusedAgainNs = 2'000'000'000;

// A block live at the OOM; string ids of the analyzer's StringTable.
struct OomBlock {
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  uint64_t allocation_id = 0;
  uint32_t owner = 0;
  uint32_t name = 0;  // the operator that allocated it, or the API
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
};

struct Oom {
  int64_t ts_ns = 0;
  uint32_t tid = 0;
  uint64_t requested_bytes = 0;
  uint64_t stream = 0;
  uint32_t name = 0;  // the API that failed
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
  uint32_t refusals = 1;      // the failed calls of this request (a retry refused again)
  int64_t last_ts_ns = 0;     // the last of them (ts_ns when refused once)
  std::vector<OomBlock> top;  // live at the last refusal, as the rows gave them: largest first
};

struct OomResult {
  uint64_t count = 0;     // every OOM of the device, a request refused again counted once
  std::vector<Oom> kept;  // the first kKeptOoms, in time order
  // The latest failed call, for telling a retry of it; also past the kept ones.
  struct Refusal {
    int64_t ts_ns = 0;
    uint32_t tid = 0, name = 0;
    uint64_t requested_bytes = 0, stream = 0;
  } last;
};

class OomLog {
 public:
  // A kOom or kOomTopAlloc event; others are ignored.
  void add(const MemEvent& e);
  OomResult result(uint32_t pid, int32_t device) const;
  std::vector<std::pair<uint32_t, int32_t>> devices() const;  // with an OOM: (pid, device)
  size_t state_bytes() const;

 private:
  std::map<std::pair<uint32_t, int32_t>, OomResult> by_device_;
};

}  // namespace memtap::blocks
