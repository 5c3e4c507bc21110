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
  if (count_ == kKept) {
    first_ = (first_ + 1) % kKept;
    --count_;
  }
  ring_[(first_ + count_) % kKept] = best;
  ++count_;
  rate_ = rate();
  rate_mult_ = fixed_point(rate_);
  if (count_ >= 2) {
    newest_lo_ = at(count_ - 2);
    newest_hi_ = at(count_ - 1);
    newest_mult_ = fixed_point(double(newest_hi_.ns - newest_lo_.ns) /
                               double(newest_hi_.tsc - newest_lo_.tsc));
  }
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
  // Newest segments first: almost every record falls in the last one.
  for (size_t i = count_ - 1; i > 0; --i) {
    const Anchor& lo = at(i - 1);
    if (tsc >= lo.tsc) {
      const Anchor& hi = at(i);
      return lo.ns +
             uint64_t(double(tsc - lo.tsc) * double(hi.ns - lo.ns) / double(hi.tsc - lo.tsc));
    }
  }
  return oldest.ns;
}

}  // namespace memtap
