// The sender's TSC-to-nanoseconds conversion (agent/sender/tsc_converter.cpp) against the
// real clocks: ticks read between two CLOCK_MONOTONIC readings convert to a time between
// them, and conversion never goes backwards, inside the newest anchor segment (the fast
// path), in older segments and beyond the last anchor.
#include "agent/sender/tsc_converter.h"

#include <gtest/gtest.h>
#include <x86intrin.h>

#include <vector>

#include "common/clock.h"

namespace memtap {
namespace {

struct Bracketed {
  uint64_t before_ns, tsc, after_ns;
};

Bracketed read_bracketed() {
  Bracketed b;
  b.before_ns = monotonic_ns();
  b.tsc = __rdtsc();
  b.after_ns = monotonic_ns();
  return b;
}

// Busy until `ns` of CLOCK_MONOTONIC have passed: anchors must be a millisecond apart.
void spin_for(uint64_t ns) {
  for (uint64_t end = monotonic_ns() + ns; monotonic_ns() < end;) {
  }
}

TEST(TscConverter, TicksConvertBetweenTheClockReadingsAroundThemAndNeverBackwards) {
  TscConverter tsc;
  std::vector<Bracketed> reads;
  tsc.add_anchor();
  for (int segment = 0; segment < 4; ++segment) {
    for (int i = 0; i < 5; ++i) {
      reads.push_back(read_bracketed());
      spin_for(300000);
    }
    tsc.add_anchor();
  }
  reads.push_back(read_bracketed());  // beyond the last anchor: extrapolated
  ASSERT_EQ(tsc.anchors(), 5u);
  // 20 us: reading an anchor's two clocks is a few tens of ns apart; this allows for the
  // VM's worst case without hiding an error of a whole segment (1.5 ms).
  const uint64_t slack_ns = 20000;
  for (const Bracketed& r : reads) {
    uint64_t ns = tsc.to_ns(r.tsc);
    EXPECT_GE(ns + slack_ns, r.before_ns);
    EXPECT_LE(ns, r.after_ns + slack_ns);
  }
  uint64_t previous = 0;
  const uint64_t first = reads.front().tsc, last = reads.back().tsc + 1000000;
  for (uint64_t t = first; t <= last; t += (last - first) / 100003 + 1) {
    uint64_t ns = tsc.to_ns(t);
    ASSERT_GE(ns, previous) << "tick " << t;
    previous = ns;
  }
}

// A backlog drained late: its records lie in old segments while anchors keep coming. The
// segment found last is kept (TscConverter::old_); whatever order the records come in, and
// after anchors are added, each converts to the same time, and that time lies between the
// clock readings around its tick.
TEST(TscConverter, OldSegmentsConvertTheSameInAnyOrderAndAfterNewAnchors) {
  TscConverter tsc;
  std::vector<Bracketed> reads;
  tsc.add_anchor();
  for (int segment = 0; segment < 24; ++segment) {
    reads.push_back(read_bracketed());
    spin_for(1100000);
    tsc.add_anchor();
  }
  ASSERT_EQ(tsc.anchors(), 25u);
  const uint64_t slack_ns = 20000;
  std::vector<uint64_t> in_order;
  for (const Bracketed& r : reads) {
    in_order.push_back(tsc.to_ns(r.tsc));
    EXPECT_GE(in_order.back() + slack_ns, r.before_ns);
    EXPECT_LE(in_order.back(), r.after_ns + slack_ns);
  }
  // Back and forth between segments far apart: every lookup misses the one kept.
  for (size_t i = 0; i < reads.size(); ++i) {
    size_t j = (i % 2 == 0) ? i / 2 : reads.size() - 1 - i / 2;
    EXPECT_EQ(tsc.to_ns(reads[j].tsc), in_order[j]) << "record " << j;
  }
  // New anchors change nothing for ticks they do not bracket.
  spin_for(1100000);
  tsc.add_anchor();
  for (size_t i = reads.size(); i-- > 0;) {
    EXPECT_EQ(tsc.to_ns(reads[i].tsc), in_order[i]) << "record " << i;
  }
  // And within one old segment, ticks in order never go backwards, up to the next anchor.
  uint64_t previous = 0;
  for (uint64_t t = reads[3].tsc; t < reads[5].tsc; t += 997) {
    uint64_t ns = tsc.to_ns(t);
    ASSERT_GE(ns, previous) << "tick " << t;
    previous = ns;
  }
}

}  // namespace
}  // namespace memtap
