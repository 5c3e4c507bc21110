// How far behind the wall clock the live monitor's horizon stands (Session::set_horizon):
// rows newer than it wait, since a process whose Hello has not come yet may still send
// older ones. At least the configured lag (MEMTAP_HORIZON_MS, 250 ms by default), and, for a
// while after a slow Hello, twice the time the slowest one took from its process's start
// to the monitor.
//
// Why learn it: a Hello comes only once its agent has loaded its sender and connected,
// which beside busy cores takes longer than the default lag. Six programs and their
// children started at once beside two busy loops sent Hellos 30-330 ms after their starts,
// slower the more had started before them, and one that took longer than the horizon found
// other processes' newer rows written before its START_TRACE (out of time order, in 9 of 20
// runs). Learnt from the ones before it, the lag covers the later, slower ones. It falls
// back to the configured lag once no slow Hello has come for kMemoryNs: the price is that
// much more delay before rows are written and shown.
#pragma once

#include <cstdint>

namespace memtap {

class HorizonLag {
 public:
  static constexpr int64_t kMemoryNs = 30'000'000'000;  // how long a slow Hello is remembered
  static constexpr int64_t kMaxNs = 2'000'000'000;      // rows held at most this long for it

  explicit HorizonLag(int64_t configured_ns) : configured_ns_(configured_ns) {}

  // A Hello came `took_ns` after its process's start (its START_TRACE), at `now_ns` (any
  // monotonic clock, the same as lag_ns's).
  void saw_hello(int64_t took_ns, int64_t now_ns);
  // The lag to hold rows back by at `now_ns`.
  int64_t lag_ns(int64_t now_ns) const;
  int64_t configured_ns() const { return configured_ns_; }

 private:
  int64_t configured_ns_;
  int64_t slowest_ns_ = 0;     // the slowest Hello remembered
  int64_t slowest_at_ns_ = 0;  // when it came
};

}  // namespace memtap
