// Samples what the whole process holds (its resident set) for the App Reserved curve, off
// the program's threads. The readings are taken on time by a thread at the program's
// priority (the catch-up thread), which does nothing else most of the time, and handed to
// whichever thread does the next round: the sender thread runs at nice 19, and beside busy
// cores its rounds came a second or more apart (the catch-up thread's grace), so samples
// taken in the rounds left App Reserved flat for that long, then jumping, and below the
// heap it should contain.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "agent/sender/buffer_drain.h"

namespace memtap {

class MemorySampler {
 public:
  // interval_ms 0: no samples.
  explicit MemorySampler(uint32_t interval_ms);
  MemorySampler(const MemorySampler&) = delete;
  MemorySampler& operator=(const MemorySampler&) = delete;

  // On the one thread that samples on time: reads the resident set when a reading is due
  // and keeps it for the next batch. Returns the nanoseconds until the next one is due
  // (UINT64_MAX when there are no samples).
  uint64_t sample_when_due(uint64_t now_ns);

  // In a round (one at a time), after the drain: appends the readings kept since the last
  // batch to `out`, as one run of thread `pid` (kRssSample records), then, when `read_now`
  // (the first and the last batch), one reading taken now. A reading older than
  // `not_before_ns` (the newest watermark this connection was sent) is dated then: it was
  // read before the last batch's take and kept after it, microseconds later, and dated as
  // read it would reach the monitor late. Returns how many it appended.
  size_t take(uint64_t now_ns, bool read_now, uint64_t not_before_ns, uint32_t pid,
              DrainResult* out);

  // What this process may hold: its cgroup v2 memory.max when set, else MemTotal; 0 unknown.
  static uint64_t memory_total_bytes();

  // The readings kept at most between two batches. A sender that cannot send (no monitor
  // yet, a full socket) keeps the whole span at a coarser step in bounded memory: past half
  // full, every second reading is kept, past three quarters every fourth, and so on (10 s at
  // each step from 10 ms up, at the default interval).
  static constexpr size_t kKept = 1024;

 private:
  // /proc/self/statm, opened above the program's descriptors; reopened when the number no
  // longer names it (the program closed it, or replaced it with dup2). One per thread that
  // reads it, so that neither waits for the other.
  class Statm {
   public:
    explicit Statm(bool open_now);
    ~Statm();
    Statm(const Statm&) = delete;
    Statm& operator=(const Statm&) = delete;
    bool read_resident(uint64_t page_bytes, uint64_t* bytes);

   private:
    bool is_ours();
    void open_file();
    int fd_ = -1;
    uint64_t dev_ = 0, ino_ = 0;
  };

  struct Reading {
    uint64_t ts_ns;
    uint64_t resident_bytes;
  };

  const uint64_t interval_ns_;
  const uint64_t page_bytes_;
  Statm on_time_;           // the sampling thread's
  Statm in_round_;          // the rounds' (read_now)
  uint64_t next_ns_ = 0;    // the sampling thread's
  uint64_t due_count_ = 0;  // the sampling thread's: readings due so far, kept or not
  // A ring with one writer (the sampling thread) and one reader (the thread doing a round,
  // under the rounds' lock): lock-free, because the rounds' thread may be the sender thread
  // at nice 19, which a lock held for a moment would have made the sampler wait for.
  std::array<Reading, kKept> kept_{};
  std::atomic<uint64_t> written_{0};  // readings ever kept; slot written_ % kKept is next
  std::atomic<uint64_t> read_{0};     // readings ever taken
};

}  // namespace memtap
