// Whether the sender thread is starved of CPU: it has waited on the run queue for at least
// half the time since its last look. Such a thread must not take the rounds' lock. At nice
// 19 beside busy cores it gets a few thousandths of a core, and every step of a round then
// takes it seconds: the catch-up thread, at the program's priority, waited 4-9 s for the lock
// (beside four busy loops and a second training run; a rank's sender fell 10 s behind and the
// monitor stalled it). A starved sender thread leaves the rounds to the catch-up thread.
#pragma once

#include <cstdint>

namespace memtap {

class StarvationWatch {
 public:
  // After a starved look, the thread counts as starved this long: a look that found it on a
  // core says little about the next round, which may span many of its slices.
  static constexpr uint64_t kHoldNs = 1'000'000'000;
  // Less waiting than this in an interval is a preemption, not starvation.
  static constexpr uint64_t kMinWaitNs = 5'000'000;

  // The run-queue wait is read at most this often (a file read, and a descriptor that is
  // open for a moment at the lowest free number; a sender thread that keeps pace wakes
  // every 2 ms).
  static constexpr uint64_t kReadEveryNs = 100'000'000;

  // A look, at `wall_ns` (monotonic): `run_delay` (common/cpu_share.h's
  // thread_run_delay_ns; 0 when the kernel does not say, and the thread then never looks
  // starved) gives the thread's run-queue wait so far, and is called when kReadEveryNs have
  // passed since it last was. True while the thread counts as starved.
  bool starved(uint64_t wall_ns, uint64_t (*run_delay)());

 private:
  uint64_t last_wall_ns_ = 0;
  uint64_t last_delay_ns_ = 0;
  uint64_t starved_until_ns_ = 0;
};

}  // namespace memtap
