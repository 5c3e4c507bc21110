// Samples what the whole process holds (its resident set) for the App Reserved curve, off
// the program's threads. The rounds read it when a reading is due, as they drain; but the
// sender thread runs at nice 19, and beside busy cores its rounds came a second or more
// apart (the catch-up thread's grace), which left App Reserved flat for that long, then
// jumping, and below the heap it contains. So when the rounds leave a reading undone, the
// catch-up thread, at the program's priority, takes it on time, until the rounds keep pace
// again (agent/sender/sender.cpp, sample_if_rounds_do_not). Either way the readings wait
// here for the next batch.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "agent/sender/buffer_drain.h"

namespace memtap {

class MemorySampler {
 public:
  // interval_ms 0: no samples.
  explicit MemorySampler(uint32_t interval_ms);
  MemorySampler(const MemorySampler&) = delete;
  MemorySampler& operator=(const MemorySampler&) = delete;

  // Who takes a reading: the thread doing a round, or the catch-up thread between its looks.
  enum class By { kRounds, kCatchUp };

  // Reads the resident set when a reading is due and keeps it for the next batch. Never
  // waits: while the other thread is taking one, it takes none. Returns the nanoseconds
  // until the next reading is due (UINT64_MAX when there are no samples).
  uint64_t sample_when_due(uint64_t now_ns, By by);

  // How long past due the next reading is at `now_ns`: negative before it is due, INT64_MIN
  // when there are no samples.
  int64_t since_due_ns(uint64_t now_ns) const;
  // Whether the catch-up thread took the last reading.
  bool last_taken_by_catch_up() const { return last_by_catch_up_.load(std::memory_order_relaxed); }
  uint64_t interval_ns() const { return interval_ns_; }

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
  // The readers take it with try_lock only: one of them may be the sender thread at nice 19,
  // which beside busy cores could hold it, preempted, for seconds.
  std::mutex reading_;
  Statm on_time_;                     // under reading_
  uint64_t due_count_ = 0;            // under reading_: readings due so far, kept or not
  std::atomic<uint64_t> next_ns_{0};  // written under reading_
  std::atomic<bool> last_by_catch_up_{false};
  Statm in_round_;  // take()'s reading now
  // A ring written under reading_ and read by one round at a time (under the rounds' lock),
  // without a lock between them.
  std::array<Reading, kKept> kept_{};
  std::atomic<uint64_t> written_{0};  // readings ever kept; slot written_ % kKept is next
  std::atomic<uint64_t> read_{0};     // readings ever taken
};

}  // namespace memtap
