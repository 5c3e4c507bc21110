// Converting the hooks' TSC ticks to CLOCK_MONOTONIC nanoseconds (see agent/event_clock.h).
//
// The sender reads (tsc, monotonic) anchor pairs back to back, one per drain cycle, after
// draining: every record drained so far has a tick count at or below the newest anchor.
// A record is converted by interpolating between the two anchors around it, so the
// mapping is exact at each anchor and monotonic everywhere; a record older than every
// kept anchor, or newer than the last, is extrapolated with the long-baseline rate.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memtap {

// The TSC now, as the hooks read it (CLOCK_MONOTONIC ns where there is no TSC).
uint64_t read_tsc();

class TscConverter {
 public:
  void add_anchor();  // no-op if the last anchor is less than 1 ms old
  uint64_t to_ns(uint64_t tsc) const;
  size_t anchors() const { return count_; }

 private:
  struct Anchor {
    uint64_t tsc;
    uint64_t ns;
  };
  static constexpr size_t kKept = 256;
  double rate() const;  // ns per tick over the longest baseline
  const Anchor& at(size_t i) const { return ring_[(first_ + i) % kKept]; }
  Anchor ring_[kKept] = {};
  size_t first_ = 0, count_ = 0;
  Anchor origin_ = {};  // the first anchor ever: the long baseline
  // Set by add_anchor: nearly every record of a drain lies between the last two anchors,
  // and to_ns ran for every record (a fifth of the sender thread in an allocation storm)
  // when each call found the segment and divided again.
  double rate_ = 1.0 / 3.0;
  Anchor newest_lo_ = {}, newest_hi_ = {};
  double newest_slope_ = 0;
};

}  // namespace memtap
