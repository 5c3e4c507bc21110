// Samples what the whole process holds (its resident set) for the App Reserved curve,
// on the sender thread so that the application pays nothing for it.
#pragma once

#include <cstdint>

#include "agent/sender/buffer_drain.h"

namespace memtap {

class MemorySampler {
 public:
  // interval_ms 0: no samples.
  explicit MemorySampler(uint32_t interval_ms);
  ~MemorySampler();
  MemorySampler(const MemorySampler&) = delete;
  MemorySampler& operator=(const MemorySampler&) = delete;

  // Appends one kRssSample record (as a run of thread `pid`) to `out` when a sample is due,
  // or always when `force` (the first and the last batch). Returns whether it did.
  bool sample_if_due(uint64_t now_ns, bool force, uint32_t pid, DrainResult* out);

  // What this process may hold: its cgroup v2 memory.max when set, else MemTotal; 0 unknown.
  static uint64_t memory_total_bytes();

 private:
  // /proc/self/statm, opened above the program's descriptors; reopened when the number no
  // longer names it (the program closed it, or replaced it with dup2).
  bool statm_is_ours();
  void open_statm();

  uint64_t interval_ns_;
  uint64_t next_ns_ = 0;
  int statm_fd_ = -1;
  uint64_t statm_dev_ = 0, statm_ino_ = 0;
  uint64_t page_bytes_;
};

}  // namespace memtap
