// The resident-set sampler (agent/sender/memory_sampler.h) on its own: readings on the
// interval's grid, taken as one run of the process's thread, dated no earlier than the last
// watermark, thinned rather than lost or unbounded when nobody takes them, and handed from
// its readers to the rounds without a lock (scripts/sanitize.sh runs it under TSan).
#include "agent/sender/memory_sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace memtap {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 5'000 * kMs;
constexpr uint32_t kPid = 4242;
constexpr MemorySampler::By kRounds = MemorySampler::By::kRounds;
constexpr MemorySampler::By kCatchUp = MemorySampler::By::kCatchUp;

std::vector<uint64_t> times(const DrainResult& out) {
  std::vector<uint64_t> ts;
  for (const EventRecord& r : out.records) ts.push_back(r.ts_ns);
  return ts;
}

TEST(MemorySampler, ReadsOnTheIntervalsGridAndHandsTheReadingsOverAsOneRun) {
  MemorySampler sampler(10);
  EXPECT_EQ(sampler.sample_when_due(kT0, kRounds), 10 * kMs);           // the first at once
  EXPECT_EQ(sampler.sample_when_due(kT0 + 3 * kMs, kRounds), 7 * kMs);  // not due: nothing read
  EXPECT_EQ(sampler.sample_when_due(kT0 + 10 * kMs, kRounds), 10 * kMs);
  // Woken 5 ms late: the next stays on the grid (t0 + 30 ms), not 10 ms after this one.
  EXPECT_EQ(sampler.sample_when_due(kT0 + 25 * kMs, kRounds), 5 * kMs);
  EXPECT_EQ(sampler.sample_when_due(kT0 + 30 * kMs, kRounds), 10 * kMs);
  // More than an interval late: a new grid from here, rather than a burst to catch up.
  EXPECT_EQ(sampler.sample_when_due(kT0 + 95 * kMs, kRounds), 10 * kMs);

  DrainResult out;
  out.records.resize(3);  // a drain's records before them
  EXPECT_EQ(sampler.take(kT0 + 96 * kMs, false, 0, kPid, &out), 5u);
  ASSERT_EQ(out.threads.size(), 1u);
  EXPECT_EQ(out.threads[0].tid, kPid);
  EXPECT_EQ(out.threads[0].first, 3u);
  EXPECT_EQ(out.threads[0].count, 5u);
  out.records.erase(out.records.begin(), out.records.begin() + 3);
  EXPECT_EQ(times(out), (std::vector<uint64_t>{kT0, kT0 + 10 * kMs, kT0 + 25 * kMs, kT0 + 30 * kMs,
                                               kT0 + 95 * kMs}));
  for (const EventRecord& r : out.records) {
    EXPECT_EQ(r.kind, uint16_t(EventKind::kRssSample));
    EXPECT_GT(r.size_bytes, 1u << 20) << "this test's own resident set";
  }

  // Taken once: the next take has nothing but the reading asked for now.
  DrainResult again;
  EXPECT_EQ(sampler.take(kT0 + 97 * kMs, false, 0, kPid, &again), 0u);
  EXPECT_TRUE(again.threads.empty());
  EXPECT_EQ(sampler.take(kT0 + 97 * kMs, true, 0, kPid, &again), 1u);
  EXPECT_EQ(times(again), (std::vector<uint64_t>{kT0 + 97 * kMs}));
}

TEST(MemorySampler, AReadingOlderThanTheLastWatermarkIsDatedAtIt) {
  MemorySampler sampler(10);
  sampler.sample_when_due(kT0, kRounds);
  sampler.sample_when_due(kT0 + 10 * kMs, kRounds);
  sampler.sample_when_due(kT0 + 20 * kMs, kRounds);
  DrainResult out;
  EXPECT_EQ(sampler.take(kT0 + 30 * kMs, true, kT0 + 15 * kMs, kPid, &out), 4u);
  EXPECT_EQ(times(out), (std::vector<uint64_t>{kT0 + 15 * kMs, kT0 + 15 * kMs, kT0 + 20 * kMs,
                                               kT0 + 30 * kMs}));
}

TEST(MemorySampler, UntakenReadingsAreThinnedOverTheWholeSpanNotDroppedAtTheEnd) {
  MemorySampler sampler(10);
  constexpr uint64_t kDue = 5000;  // 50 s of readings with nobody to take them
  for (uint64_t i = 0; i < kDue; ++i) sampler.sample_when_due(kT0 + i * 10 * kMs, kRounds);
  DrainResult out;
  const size_t n = sampler.take(kT0 + kDue * 10 * kMs, false, 0, kPid, &out);
  EXPECT_LE(n, MemorySampler::kKept);
  EXPECT_GT(n, MemorySampler::kKept / 2);
  const std::vector<uint64_t> ts = times(out);
  ASSERT_FALSE(ts.empty());
  EXPECT_EQ(ts.front(), kT0);
  for (size_t i = 1; i < ts.size(); ++i) ASSERT_LT(ts[i - 1], ts[i]);
  // The newest kept is recent: the step grew with the backlog, it did not stop.
  EXPECT_GE(ts.back(), kT0 + (kDue - MemorySampler::kKept) * 10 * kMs);
  // Every half of the ring is at one step: the first 512 readings are all there.
  EXPECT_EQ(ts[MemorySampler::kKept / 2 - 1], kT0 + (MemorySampler::kKept / 2 - 1) * 10 * kMs);
  EXPECT_EQ(ts[MemorySampler::kKept / 2], kT0 + (MemorySampler::kKept / 2) * 10 * kMs);
  EXPECT_EQ(ts[MemorySampler::kKept / 2 + 1], kT0 + (MemorySampler::kKept / 2 + 2) * 10 * kMs);

  // Taken, the ring is empty again: every reading is kept.
  const uint64_t t1 = kT0 + (kDue + 1) * 10 * kMs;
  for (uint64_t i = 0; i < 10; ++i) sampler.sample_when_due(t1 + i * 10 * kMs, kRounds);
  DrainResult next;
  EXPECT_EQ(sampler.take(t1 + 100 * kMs, false, 0, kPid, &next), 10u);
}

// The catch-up thread looks at how late the next reading is, and whether the last was its
// own, to know when the rounds have left the readings to it and when they take them again.
TEST(MemorySampler, SaysHowLateTheNextReadingIsAndWhoTookTheLast) {
  MemorySampler sampler(10);
  sampler.sample_when_due(kT0, kRounds);
  EXPECT_EQ(sampler.since_due_ns(kT0 + 4 * kMs), -6 * int64_t(kMs));
  EXPECT_EQ(sampler.since_due_ns(kT0 + 17 * kMs), 7 * int64_t(kMs));
  EXPECT_FALSE(sampler.last_taken_by_catch_up());
  EXPECT_EQ(sampler.sample_when_due(kT0 + 17 * kMs, kCatchUp), 3 * kMs);
  EXPECT_TRUE(sampler.last_taken_by_catch_up());
  EXPECT_EQ(sampler.since_due_ns(kT0 + 17 * kMs), -3 * int64_t(kMs));
  // Not due: a round's call takes nothing, and the last stays the catch-up thread's.
  sampler.sample_when_due(kT0 + 18 * kMs, kRounds);
  EXPECT_TRUE(sampler.last_taken_by_catch_up());
  sampler.sample_when_due(kT0 + 20 * kMs, kRounds);
  EXPECT_FALSE(sampler.last_taken_by_catch_up());
  DrainResult out;
  EXPECT_EQ(sampler.take(kT0 + 21 * kMs, false, 0, kPid, &out), 3u);
  EXPECT_EQ(times(out), (std::vector<uint64_t>{kT0, kT0 + 17 * kMs, kT0 + 20 * kMs}));
  EXPECT_EQ(MemorySampler(0).since_due_ns(kT0), INT64_MIN);
}

TEST(MemorySampler, NoIntervalNoReadings) {
  MemorySampler sampler(0);
  EXPECT_EQ(sampler.sample_when_due(kT0, kRounds), UINT64_MAX);
  DrainResult out;
  EXPECT_EQ(sampler.take(kT0, true, 0, kPid, &out), 0u);
  EXPECT_TRUE(out.records.empty());
  EXPECT_TRUE(out.threads.empty());
}

// The rounds' thread and the catch-up thread read when due while rounds take, as in the
// agent: every reading is taken once, in order, and nobody waits for a lock.
TEST(MemorySampler, TwoReadersAndARoundShareNoLock) {
  MemorySampler sampler(1);
  constexpr uint64_t kReadings = 20000;
  std::atomic<uint64_t> clock{kT0};
  std::atomic<int> done{0};
  auto reader = [&](MemorySampler::By by) {
    for (uint64_t i = 0; i < kReadings; ++i) {
      sampler.sample_when_due(clock.fetch_add(kMs / 2), by);
      if (i % 256 == 255) std::this_thread::yield();
    }
    done.fetch_add(1);
  };
  std::thread rounds(reader, kRounds);
  std::thread catch_up(reader, kCatchUp);
  std::vector<uint64_t> ts;
  for (bool last = false; !last;) {
    last = done.load() == 2;
    DrainResult out;
    sampler.take(0, false, 0, kPid, &out);
    for (uint64_t t : times(out)) ts.push_back(t);
  }
  rounds.join();
  catch_up.join();
  ASSERT_FALSE(ts.empty());
  for (size_t i = 1; i < ts.size(); ++i) ASSERT_LT(ts[i - 1], ts[i]) << i;
  EXPECT_EQ(ts.front(), kT0);
  // One reading per millisecond of the shared clock at most; the taker may have been off its
  // core for a while, and then some were thinned.
  EXPECT_LE(ts.size(), kReadings + 1);
  EXPECT_GE(ts.back(), kT0 + (kReadings - 2 * MemorySampler::kKept) * kMs);
}

}  // namespace
}  // namespace memtap
