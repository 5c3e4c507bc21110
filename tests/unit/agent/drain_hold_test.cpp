// The sender's hold rule (agent/sender/drain_hold.cpp): when it leaves records in the
// buffers instead of draining them, for how long, and how often it looks at the program's
// threads. The rule is fed times and a probe of the test's own, round by round, as the
// sender's loop feeds it; its probe is checked against real spinning threads.
#include "agent/sender/drain_hold.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/cpu_share.h"

namespace memtap {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kRound = 2 * kMs;  // the sender's default drain interval
constexpr uint64_t kLimit = 256ull << 20;

// The probe the rule asks: what the test says, and how often it was asked.
bool g_cores_full = false;
int g_looks = 0;
bool probe() {
  ++g_looks;
  return g_cores_full;
}

class DrainHoldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_cores_full = false;
    g_looks = 0;
    hold.hold_ns = 200 * kMs;
    hold.last_drain_ns = now;  // the sender's start
  }
  // One round of the sender's loop, `per_round` slots having been published since the last:
  // the rule, then a drain of all that wait unless held. Returns whether it was held.
  bool round(uint64_t per_round = 20'000, uint64_t buffered = 0) {
    waiting += per_round;
    const bool held = hold_this_round(&hold, now, waiting, buffered, kLimit, probe);
    if (!held) {
      drained(&hold, now);
      waiting = 0;
    }
    now += kRound;
    return held;
  }

  DrainHold hold;
  uint64_t now = 1000 * kMs;
  uint64_t waiting = 0;
};

TEST_F(DrainHoldTest, FastEventsOnFullCoresAreHeldForAtMostTheHoldThenDrained) {
  g_cores_full = true;
  now += kRound;
  const uint64_t start = now;
  int held = 0;
  while (round()) ++held;  // 10 M slots/s
  EXPECT_EQ(hold.holds, 1u);
  // Held every round of the 200 ms, and the round at 200 ms drains.
  EXPECT_EQ(held, 100);
  EXPECT_EQ(now - kRound - start, 200 * kMs);
  // Looked once to begin, then once every 10 ms while holding.
  EXPECT_LE(g_looks, 1 + 20);
  EXPECT_GE(g_looks, 1 + 19);
  EXPECT_EQ(waiting, 0u) << "the last round drained all that was held";
}

TEST_F(DrainHoldTest, WhatWaitsAtTheFirstRoundDecidesBeforeAnyDrain) {
  // A storm that began with the program, before the sender's first round.
  g_cores_full = true;
  now += 25 * kMs;
  EXPECT_TRUE(round(1'400'000));
  EXPECT_EQ(g_looks, 1);
}

TEST_F(DrainHoldTest, SlowEventsAreNeverHeldAndTheThreadsAreNeverLookedAt) {
  g_cores_full = true;
  now += kRound;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(round(2'000)) << "round " << i;  // 1 M slots/s
  EXPECT_EQ(g_looks, 0);
  EXPECT_EQ(hold.holds, 0u);
}

TEST_F(DrainHoldTest, FastEventsBesideAFreeCoreAreDrainedAndLookedAtEveryTenMs) {
  now += kRound;
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(round()) << "round " << i;  // 100 ms
  EXPECT_EQ(hold.holds, 0u);
  EXPECT_GE(g_looks, 9);
  EXPECT_LE(g_looks, 11);
}

TEST_F(DrainHoldTest, ALookThatTookLongSpacesTheNextOnesOut) {
  now += kRound;
  ASSERT_FALSE(round());
  ASSERT_EQ(g_looks, 1);
  looked_for(&hold, 1 * kMs);  // a thousand threads' stat files
  for (int i = 0; i < 24; ++i) EXPECT_FALSE(round()) << "round " << i;  // 48 ms
  EXPECT_EQ(g_looks, 1) << "no look within 50 ms of one that took 1 ms";
  EXPECT_FALSE(round());
  EXPECT_EQ(g_looks, 2);
  looked_for(&hold, 20'000);  // a few threads: back to every 10 ms
  EXPECT_EQ(hold.look_every_ns, DrainHold::kLookEveryNs);
}

TEST_F(DrainHoldTest, ALookThatFindsACoreFreeEndsTheHold) {
  g_cores_full = true;
  now += kRound;
  ASSERT_TRUE(round());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(round());  // 10 ms: no look due yet
  const int looks = g_looks;
  g_cores_full = false;  // the storm is over
  EXPECT_FALSE(round()) << "the look due now ends the hold";
  EXPECT_EQ(g_looks, looks + 1);
  EXPECT_EQ(hold.held_since_ns, 0u);
  EXPECT_EQ(waiting, 0u);
}

TEST_F(DrainHoldTest, HalfTheBufferBoundEndsAHoldAndPreventsOne) {
  g_cores_full = true;
  now += kRound;
  ASSERT_TRUE(round(20'000, kLimit / 4));
  EXPECT_FALSE(round(20'000, kLimit / 2)) << "half the bound stays for the program";
  EXPECT_EQ(hold.held_since_ns, 0u);
  now += DrainHold::kLookEveryNs;
  EXPECT_FALSE(round(200'000, kLimit / 2)) << "nor does a hold begin with half of it used";
  EXPECT_EQ(hold.holds, 1u);
}

TEST_F(DrainHoldTest, AHoldOfZeroNeverHolds) {
  hold.hold_ns = 0;
  g_cores_full = true;
  now += kRound;
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(round(200'000));
  EXPECT_EQ(g_looks, 0);
}

TEST_F(DrainHoldTest, AfterAHoldRunsOutOneRoundDrainsAndTheNextMayHoldAgain) {
  g_cores_full = true;
  now += kRound;
  while (round()) {
  }
  // The program still fills the cores and events still come fast: held once more as soon
  // as a look is due, within 10 ms.
  int drains = 1;
  while (!round()) ASSERT_LT(++drains, 6);
  EXPECT_EQ(hold.holds, 2u);
}

// The sender's probe against real threads: spinning threads are running or runnable
// whenever /proc is read, so as many as there are usable CPUs fill the cores.
TEST(ProgramFillsTheCores, AsManySpinningThreadsAsCpusFillThem) {
  const int cpus = usable_cpus();
  if (cpus >= 2) {
    EXPECT_FALSE(program_fills_the_cores()) << "this thread alone, on " << cpus << " CPUs";
  }
  std::atomic<int> started{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < cpus; ++i) {
    threads.emplace_back([&] {
      ++started;
      while (!stop.load()) {
      }
    });
  }
  while (started.load() < cpus) {
  }
  const bool full = program_fills_the_cores();
  // Named as the agent's threads are, the same spinning threads are not the program's.
  for (std::thread& t : threads) pthread_setname_np(t.native_handle(), "memtap-sender");
  const bool full_of_agent_threads = program_fills_the_cores();
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(full);
  if (cpus >= 2) {
    EXPECT_FALSE(full_of_agent_threads);
  }
}

}  // namespace
}  // namespace memtap
