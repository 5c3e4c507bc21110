// The short summary printed when a recording ends: per process, what it allocated, its
// peak live bytes and what was still live at the end. Fed with the rows the engine emits.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "monitor/engine/dump_row.h"
#include "monitor/engine/process_info.h"

namespace memtap {

struct ProcessTotals {
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t bytes_allocated = 0;
  int64_t live_bytes = 0;
  int64_t peak_live_bytes = 0;
  uint64_t largest_allocation = 0;
};

class RunSummary {
 public:
  void add(const DumpRow* rows, size_t count);
  // Prints to out: one line for the session, one per process.
  void print(FILE* out, const std::string& db_path, const std::vector<ProcessInfo>& processes,
             uint64_t rejected_messages) const;

 private:
  std::map<uint32_t, ProcessTotals> totals_;  // by pid
};

// "1.5 GiB", "12.0 KiB", "512 B".
std::string format_bytes(double bytes);

}  // namespace memtap
