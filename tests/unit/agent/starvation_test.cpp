// Whether the sender thread is starved of CPU (agent/sender/starvation.h), from given clock
// and run-queue readings (the kernel's reading: cpu_share_test.cpp).
#include "agent/sender/starvation.h"

#include <gtest/gtest.h>

namespace memtap {
namespace {

constexpr uint64_t kMs = 1'000'000;

// The run-queue wait the next read returns, and how many reads there were.
uint64_t g_delay = 0;
int g_reads = 0;
uint64_t fake_delay() {
  ++g_reads;
  return g_delay;
}

TEST(StarvationWatch, AThreadThatWaitsForACoreHalfTheTimeIsStarvedForAWhile) {
  g_delay = 0;
  g_reads = 0;
  StarvationWatch watch;
  EXPECT_FALSE(watch.starved(1000 * kMs, fake_delay));
  // 600 ms later, 400 of them waiting for a core (nice 19 beside busy loops).
  g_delay = 400 * kMs;
  EXPECT_TRUE(watch.starved(1600 * kMs, fake_delay));
  // Still so for a while after, though the next interval looks fine.
  EXPECT_TRUE(watch.starved(1750 * kMs, fake_delay));
  EXPECT_TRUE(watch.starved(2500 * kMs, fake_delay));
  EXPECT_FALSE(watch.starved(2700 * kMs, fake_delay)) << "a second without waiting";
}

TEST(StarvationWatch, APreemptionOrAShortWaitIsNotStarvation) {
  g_delay = 0;
  g_reads = 0;
  StarvationWatch watch;
  watch.starved(1000 * kMs, fake_delay);
  g_delay = 4 * kMs;  // 4 ms of 6: most of the interval, but one time slice
  EXPECT_FALSE(watch.starved(1106 * kMs, fake_delay));
  g_delay += 30 * kMs;  // 30 ms of 100
  EXPECT_FALSE(watch.starved(1206 * kMs, fake_delay));
}

// A sender that keeps pace wakes every 2 ms: the kernel's figure is read only every
// kReadEveryNs, not at every wakeup.
TEST(StarvationWatch, TheWaitIsReadAtMostEveryReadInterval) {
  g_delay = 0;
  g_reads = 0;
  StarvationWatch watch;
  for (uint64_t t = 1000 * kMs; t < 2000 * kMs; t += 2 * kMs) watch.starved(t, fake_delay);
  EXPECT_EQ(g_reads, 10);
}

}  // namespace
}  // namespace memtap
