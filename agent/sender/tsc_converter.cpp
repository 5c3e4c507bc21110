// See tsc_converter.h.
#include "agent/sender/tsc_converter.h"

#include "common/clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace memtap {

uint64_t read_tsc() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return monotonic_ns();
#endif
}

void TscConverter::add_anchor() {
  // Best of three: the pair with the shortest gap between its TSC reads brackets the
  // clock_gettime most tightly.
  Anchor best{};
  uint64_t best_gap = ~0ull;
  for (int i = 0; i < 3; ++i) {
    uint64_t t0 = read_tsc();
    uint64_t ns = monotonic_ns();
    uint64_t t1 = read_tsc();
    if (t1 - t0 < best_gap) {
      best_gap = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  if (count_ == 0) {
    origin_ = best;
  } else {
    const Anchor& last = at(count_ - 1);
    if (best.ns < last.ns + 1000000 || best.tsc <= last.tsc) return;
  }
  old_ = {};  // its anchors may be about to leave the ring
  if (count_ == kKept) {
    first_ = (first_ + 1) % kKept;
    --count_;
  }
  ring_[(first_ + count_) % kKept] = best;
  ++count_;
  rate_ = rate();
  rate_mult_ = fixed_point(rate_);
  if (count_ >= 2) newest_ = Segment::between(at(count_ - 2), at(count_ - 1));
}

double TscConverter::rate() const {
  const Anchor& last = at(count_ - 1);
  if (count_ < 2 || last.tsc == origin_.tsc) return 1.0 / 3.0;  // ~3 GHz until measured
  return double(last.ns - origin_.ns) / double(last.tsc - origin_.tsc);
}

uint64_t TscConverter::to_ns_elsewhere(uint64_t tsc) const {
  if (count_ == 0) return monotonic_ns();
  const Anchor& last = at(count_ - 1);
  if (tsc >= last.tsc) return last.ns + uint64_t(double(tsc - last.tsc) * rate_);
  const Anchor& oldest = at(0);
  if (tsc <= oldest.tsc) return oldest.ns - uint64_t(double(oldest.tsc - tsc) * rate_);
  if (!old_.contains(tsc)) {
    // Anchors are in tick order: bisect for at(lo).tsc <= tsc < at(hi).tsc.
    size_t lo = 0, hi = count_ - 1;
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      (at(mid).tsc <= tsc ? lo : hi) = mid;
    }
    old_ = Segment::between(at(lo), at(hi));
  }
  return old_.to_ns(tsc);
}

}  // namespace memtap
