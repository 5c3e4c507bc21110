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
  // Inline for the two cases nearly every record takes (a call per record was a fifth of
  // the sender thread): between the last two anchors, or after the last one.
  // Their slopes are kept in 32.32 fixed point: one integer multiply, where the conversions
  // between 64-bit integers and doubles were most of the loop.
  uint64_t to_ns(uint64_t tsc) const {
    if (__builtin_expect(count_ >= 2 && tsc >= newest_.lo.tsc, 1)) {
      if (tsc < newest_.hi.tsc) return newest_.to_ns(tsc);
      return newest_.hi.ns + scale(tsc - newest_.hi.tsc, rate_mult_);
    }
    return to_ns_elsewhere(tsc);
  }
  size_t anchors() const { return count_; }

 private:
  struct Anchor {
    uint64_t tsc;
    uint64_t ns;
  };
  static uint64_t scale(uint64_t ticks, uint64_t mult) {
    return uint64_t((unsigned __int128)ticks * mult >> 32);
  }
  static uint64_t fixed_point(double ns_per_tick) { return uint64_t(ns_per_tick * 4294967296.0); }
  // Two neighbouring anchors and the slope between them; empty ({}) contains no tick.
  struct Segment {
    Anchor lo, hi;
    uint64_t mult;  // ns per tick from lo to hi, 32.32
    static Segment between(const Anchor& lo, const Anchor& hi) {
      return {lo, hi, fixed_point(double(hi.ns - lo.ns) / double(hi.tsc - lo.tsc))};
    }
    bool contains(uint64_t tsc) const { return tsc >= lo.tsc && tsc < hi.tsc; }
    uint64_t to_ns(uint64_t tsc) const { return lo.ns + scale(tsc - lo.tsc, mult); }
  };
  static constexpr size_t kKept = 256;
  double rate() const;  // ns per tick over the longest baseline
  uint64_t to_ns_elsewhere(uint64_t tsc) const;
  const Anchor& at(size_t i) const { return ring_[(first_ + i) % kKept]; }
  Anchor ring_[kKept] = {};
  size_t first_ = 0, count_ = 0;
  Anchor origin_ = {};  // the first anchor ever: the long baseline
  // Set by add_anchor: nearly every record of a drain lies between the last two anchors,
  // and to_ns ran for every record (a fifth of the sender thread in an allocation storm)
  // when each call found the segment and divided again.
  double rate_ = 1.0 / 3.0;
  Segment newest_ = {};     // between the last two anchors
  uint64_t rate_mult_ = 0;  // rate_, 32.32
  // The older segment to_ns_elsewhere used last. A backlog drained after the sender was
  // kept off the CPU (nice 19 beside a busy program) lies in one or a few old segments,
  // record after record, while every drain of the catch-up adds an anchor: walking back
  // from the newest anchor, with a division, cost each record the number of anchors added
  // since. Mutable: a cache, reset by add_anchor.
  mutable Segment old_ = {};
};

}  // namespace memtap
