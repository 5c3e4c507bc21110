// The device OOMs of a recording, per (process, device): each failed allocation
// (OOM_DETAIL OOM_TRIGGER) with the blocks its OOM_TOP_ALLOC rows name, as `memtap report`
// lists them.
//
// An OOM_TOP_ALLOC row belongs to the latest OOM_TRIGGER of its process and device (the
// engine writes them right after it, at its time; msMemScope does the same). The first
// kKeptOoms of a device are kept with at most kKeptOomBlocks blocks each and the rest only
// counted, so a program that fails again and again (a retry loop) cannot grow the memory.
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
  std::vector<OomBlock> top;  // as the rows gave them: largest first
};

struct OomResult {
  uint64_t count = 0;     // every OOM of the device
  std::vector<Oom> kept;  // the first kKeptOoms, in time order
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
