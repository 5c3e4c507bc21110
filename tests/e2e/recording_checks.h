// Checks that hold for every recording memtap writes, whatever the traced programs did:
// the msMemScope encodings, time order, FREE/MALLOC pairing, one START_TRACE/STOP_TRACE
// per process, a session row per process, and a complete file.
//
// Each check reports through GoogleTest (non-fatal), at most a few offending rows per
// check followed by their count, so one broken rule does not bury the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/e2e/recording_reader.h"

namespace memtap::e2e {

// Collects rule violations; report() adds one test failure listing the first few.
class Violations {
 public:
  explicit Violations(std::string rule) : rule_(std::move(rule)) {}
  void add(const std::string& what);
  size_t count() const { return count_; }
  // Adds a failure (at the caller's file and line) if anything was added.
  void report(const char* file, int line) const;

 private:
  std::string rule_;
  std::vector<std::string> first_;
  size_t count_ = 0;
};
#define MEMTAP_REPORT(violations) (violations).report(__FILE__, __LINE__)

// Realtime nanoseconds: taken before the first traced program started and after the last
// one ended.
struct WallWindow {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

// Every rule that does not depend on what the programs did:
//  - the memscope_dump columns, in order, with their storage classes;
//  - MALLOC/FREE: Event Type HOST, Name N/A, Device Id cpu, Ptr 0x%016llx, Attr a JSON
//    object of string values with allocation_id, addr (= Ptr) and size, nothing but
//    kind=mmap and inherited_from besides; SYSTEM: START_TRACE/STOP_TRACE, N/A elsewhere;
//  - IDs increasing, timestamps non-decreasing in ID order, all inside `window`;
//  - every FREE paired: a MALLOC earlier in ID and time with its allocation_id, Ptr, size
//    and kind, in the same process, or in the parent named by inherited_from (then the
//    FREE's process was forked from it); no allocation_id on two MALLOCs, nor on two
//    FREEs of one process;
//  - per process: one START_TRACE, its first row, and one STOP_TRACE, its last row;
//  - memtap_session: exactly one row per process that has rows, and no others, each with
//    events_dropped 0 and bye_received 1; memtap_meta complete = 1.
void expect_well_formed(const RecordingData& rec, const WallWindow& window);

}  // namespace memtap::e2e
