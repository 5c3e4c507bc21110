// Leak suspects by step, and the no-step fallback (alive at the end, trend).
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "tests/unit/blocks/script.h"

namespace memtap::blocks::test {
namespace {

constexpr int64_t kStepNs = 1'000'000'000;

// Steps 1..steps+1 begin at t = s * kStepNs; `body(s, t0)` writes step s's events.
template <class Body>
void run_steps(Script& sc, int steps, Body body) {
  for (int s = 1; s <= steps + 1; ++s) {
    const int64_t t0 = s * kStepNs;
    sc.step(t0);
    if (s <= steps) body(s, t0);
  }
}

// Times are whatever a file or a sender says: a block allocated near int64's bottom and
// freed near its top has a lifetime and a trend span past int64, which saturate (the
// differences overflowed; the sanitizer builds of this test stop on that).
TEST(Leaks, TimesAtBothEndsOfInt64SaturateTheSpans) {
  constexpr int64_t kLow = -9'000'000'000'000'000'000, kHigh = 9'000'000'000'000'000'000;
  Script s;
  s.malloc(kLow, 0x1000, 64, {"early"});
  s.malloc(0, 0x2000, 32, {"middle"});
  s.free(kHigh, 0x1000);
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  EXPECT_EQ(r.trend_span_ns, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(r.alive_bytes, 32u);
  const LifetimeResult l = a.lifetimes(100, kHostDevice);
  ASSERT_FALSE(l.by_owner.empty());
  EXPECT_EQ(l.by_owner[0].key.label, "early");
  EXPECT_EQ(l.by_owner[0].max_lifetime_ns, std::numeric_limits<int64_t>::max());
}

// A suspect's first and last live bytes come from the history as they are: its last,
// int64's top, is 2^63 as a double, which no int64 holds (found by the wire fuzzer; x86
// turned it into int64's bottom).
TEST(Leaks, ASuspectsLiveBytesAtInt64sTopAreReportedExactly) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr uint64_t kGrowth = uint64_t{1} << 59;
  constexpr uint64_t kFirst = uint64_t(kMax) - 10 * kGrowth;
  Script sc;
  uint64_t next = 0x1000;
  run_steps(sc, 14, [&](int s, int64_t t0) {
    if (s < 4) return;
    const uint64_t size = s == 4 ? kFirst : kGrowth;
    sc.malloc(t0 + 30, next, size, {"metrics", "log.py(9): keep"});
    next += size;
  });
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  ASSERT_EQ(r.owner_suspects.size(), 1u);
  EXPECT_EQ(r.owner_suspects[0].first_bytes, int64_t(kFirst));  // boundary 5
  EXPECT_EQ(r.owner_suspects[0].last_bytes, kMax);              // boundary 15
}

TEST(Leaks, AnOwnerGrowing40MiBPerStepAmongSteadyOnesIsTheOneSuspect) {
  Script sc;
  sc.malloc(1, 0x1000'0000, 100 * kMiB, {"cache", "cache.py(1): init"});  // held throughout
  uint64_t next = 0x2000'0000;
  run_steps(sc, 14, [&](int s, int64_t t0) {
    // A steady owner: allocates and frees within the step.
    sc.malloc(t0 + 10, 0x9000'0000, 10 * kMiB, {"activations", "model.py(3): fwd"});
    sc.free(t0 + 20, 0x9000'0000);
    if (s >= 4) {  // the leak starts in step 4
      sc.malloc(t0 + 30, next, 40 * kMiB, {"metrics", "log.py(9): keep"});
      next += 64 * kMiB;
    }
  });
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  EXPECT_EQ(r.steps, 15u);
  ASSERT_TRUE(r.step_based);
  ASSERT_EQ(r.owner_suspects.size(), 1u);
  const LeakSuspect& o = r.owner_suspects[0];
  EXPECT_EQ(o.key.label, "metrics");
  EXPECT_DOUBLE_EQ(o.bytes_per_step, double(40 * kMiB));
  EXPECT_EQ(o.steps_judged, 10u);
  EXPECT_EQ(o.steps_grown, 10u);
  EXPECT_EQ(o.growth_start_step, 4u);
  EXPECT_EQ(o.first_bytes, int64_t(40 * kMiB) * 1);  // boundary 5: step 4's block
  EXPECT_EQ(o.last_bytes, int64_t(40 * kMiB) * 11);  // boundary 15: steps 4..14
  ASSERT_EQ(r.stack_suspects.size(), 1u);
  EXPECT_EQ(r.stack_suspects[0].key.label, "log.py(9): keep");
  EXPECT_DOUBLE_EQ(r.stack_suspects[0].bytes_per_step, double(40 * kMiB));
}

// A leaking owner names the stacks that held it at the last step (even when the program
// frees it all before the end), and an owner live at the end those that hold it then.
TEST(Leaks, ALeakingOwnerCarriesTheStacksThatHoldItsBytes) {
  Script sc;
  sc.malloc(1, 0x1000'0000, 100 * kMiB, {"cache", "cache.py(1): init"});
  uint64_t next = 0x2000'0000;
  run_steps(sc, 6, [&](int s, int64_t t0) {
    sc.malloc(t0 + 30, next, 40 * kMiB, {"metrics", "log.py(9): keep"});
    next += 64 * kMiB;
    if (s % 2 == 0) {
      sc.malloc(t0 + 40, next, 10 * kMiB, {"metrics", "log.py(12): also"});
      next += 64 * kMiB;
    }
  });
  for (uint64_t addr = 0x2000'0000; addr < next; addr += 64 * kMiB) sc.free(8 * kStepNs, addr);
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  ASSERT_EQ(r.owner_suspects.size(), 1u);
  const LeakSuspect& o = r.owner_suspects[0];
  EXPECT_EQ(o.key.label, "metrics");
  ASSERT_EQ(o.stacks.size(), 2u);
  EXPECT_EQ(o.stacks[0].key.label, "log.py(9): keep");
  EXPECT_EQ(o.stacks[0].bytes, 6 * 40 * kMiB);
  EXPECT_EQ(o.stacks[0].blocks, 6u);
  EXPECT_EQ(o.stacks[1].key.label, "log.py(12): also");
  EXPECT_EQ(o.stacks[1].bytes, 3 * 10 * kMiB);
  const AliveGroup* cache = nullptr;
  for (const AliveGroup& g : r.alive_by_owner)
    if (g.key.label == "cache") cache = &g;
  ASSERT_NE(cache, nullptr);
  ASSERT_EQ(cache->stacks.size(), 1u);
  EXPECT_EQ(cache->stacks[0].key.label, "cache.py(1): init");
  EXPECT_DOUBLE_EQ(cache->stacks[0].share, double(100 * kMiB) / double(r.alive_bytes));
}

// Each step's live bytes at its start, its most while it ran, and at its end (the next
// step's start; the last step's end is now), and how much a step leaves live.
TEST(Leaks, EachStepKeepsItsStartPeakAndEndAndTheGrowthPerStep) {
  Script sc;
  sc.malloc(1, 0x1000'0000, 100 * kMiB, {"model"});
  uint64_t next = 0x2000'0000;
  run_steps(sc, 4, [&](int, int64_t t0) {
    sc.malloc(t0 + 10, 0x9000'0000, 50 * kMiB, {"activations"});
    sc.free(t0 + 20, 0x9000'0000);
    sc.malloc(t0 + 30, next, 40 * kMiB, {"history"});
    next += 64 * kMiB;
  });
  sc.malloc(6 * kStepNs + 10, 0x9000'0000, 1 * kMiB, {"tail"});  // in step 5, under way
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  ASSERT_EQ(r.step_figures.size(), 5u);
  for (uint64_t s = 1; s <= 4; ++s) {
    const StepFigures& f = r.step_figures[s - 1];
    const uint64_t start = 100 * kMiB + (s - 1) * 40 * kMiB;
    EXPECT_EQ(f.step, s);
    EXPECT_EQ(f.start_ns, int64_t(s) * kStepNs);
    EXPECT_EQ(f.start_bytes, start) << "step " << s;
    EXPECT_EQ(f.peak_bytes, start + 50 * kMiB) << "the activations on top";
    EXPECT_EQ(f.end_bytes, start + 40 * kMiB);
  }
  const StepFigures& last = r.step_figures[4];
  EXPECT_EQ(last.step, 5u);
  EXPECT_EQ(last.start_bytes, 260 * kMiB);
  EXPECT_EQ(last.peak_bytes, 261 * kMiB);
  EXPECT_EQ(last.end_bytes, 261 * kMiB) << "the step under way ends now";
  EXPECT_DOUBLE_EQ(r.live_bytes_per_step, double(40 * kMiB));
}

// A key that holds a lot and creeps by a few bytes a step (an allocator's churn under no
// label) is not a leak; a small key that grows by about what it holds is.
TEST(Leaks, ACreepTinyAgainstWhatTheKeyHoldsIsNotASuspect) {
  Script sc;
  sc.malloc(1, 0x1000'0000, 64 * kMiB, {"", "big.py(1): hold"});
  uint64_t creep = 0x3000'0000, small = 0x6000'0000;
  run_steps(sc, 12, [&](int, int64_t t0) {
    sc.malloc(t0 + 10, creep, 304, {"", "big.py(1): hold"});
    creep += 4096;
    sc.malloc(t0 + 20, small, 512, {"tiny", "small.py(2): keep"});
    small += 4096;
  });
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  ASSERT_TRUE(r.step_based);
  ASSERT_EQ(r.owner_suspects.size(), 1u);
  EXPECT_EQ(r.owner_suspects[0].key.label, "tiny");
  EXPECT_DOUBLE_EQ(r.owner_suspects[0].bytes_per_step, 512.0);
  ASSERT_EQ(r.stack_suspects.size(), 1u);
  EXPECT_EQ(r.stack_suspects[0].key.label, "small.py(2): keep");
}

TEST(Leaks, ASawtoothIsNotReportedButOneDipInTenIs) {
  // Live bytes of "saw" at boundaries 1..11: 0 40 80 0 40 80 0 40 80 0 40 (grows 7 of 10).
  // "mostly" grows every step but one: 9 of 10 >= 80%.
  Script sc;
  uint64_t saw_addr = 0x1000'0000, mostly_addr = 0x5000'0000;
  std::vector<uint64_t> saw_live;
  run_steps(sc, 10, [&](int s, int64_t t0) {
    if (s % 3 == 0) {
      for (uint64_t addr : saw_live) sc.free(t0 + 1, addr);
      saw_live.clear();
    } else {
      sc.malloc(t0 + 1, saw_addr, 40 * kMiB, {"saw"});
      saw_live.push_back(saw_addr);
      saw_addr += 64 * kMiB;
    }
    if (s == 5) {
      sc.free(t0 + 2, mostly_addr - 64 * kMiB);  // the one dip
    } else {
      sc.malloc(t0 + 2, mostly_addr, 8 * kMiB, {"mostly"});
      mostly_addr += 64 * kMiB;
    }
  });
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  ASSERT_TRUE(r.step_based);
  ASSERT_EQ(r.owner_suspects.size(), 1u);
  EXPECT_EQ(r.owner_suspects[0].key.label, "mostly");
  EXPECT_EQ(r.owner_suspects[0].steps_grown, 9u);
  EXPECT_EQ(r.owner_suspects[0].steps_judged, 10u);
}

// A leak that grows every third step (a record kept every few steps) grows in only a third
// of the judged steps, but never gives anything back: a suspect. A warm-up that grew three times
// and stopped, and a key that grows every third step but frees too, are not.
TEST(Leaks, AKeyThatGrowsEveryFewStepsAndNeverFallsIsASuspect) {
  Script sc;
  uint64_t cache = 0x1000'0000, warm = 0x3000'0000, churn = 0x5000'0000;
  std::vector<uint64_t> churned;
  run_steps(sc, 30, [&](int s, int64_t t0) {
    if (s % 3 == 0) {
      sc.malloc(t0 + 1, cache, 8 * 1024, {"metrics cache"});
      cache += 16 * 1024;
    }
    if (s >= 21 && s <= 23) {  // grew at the start of the judged steps, then stopped
      sc.malloc(t0 + 2, warm, 64 * 1024, {"warm-up"});
      warm += 128 * 1024;
    }
    if (s % 3 == 1) {  // grows every third step, and gives part back in between
      sc.malloc(t0 + 3, churn, 32 * 1024, {"churn"});
      churned.push_back(churn);
      churn += 64 * 1024;
    } else if (s % 3 == 2 && churned.size() > 1) {
      sc.free(t0 + 3, churned.front());
      churned.erase(churned.begin());
    }
  });
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  ASSERT_TRUE(r.step_based);
  ASSERT_EQ(r.owner_suspects.size(), 1u);
  EXPECT_EQ(r.owner_suspects[0].key.label, "metrics cache");
  EXPECT_EQ(r.owner_suspects[0].steps_judged, 10u);
  EXPECT_GE(r.owner_suspects[0].steps_grown, 3u);
  EXPECT_LE(r.owner_suspects[0].steps_grown, 4u);
  EXPECT_NEAR(r.owner_suspects[0].bytes_per_step, 8.0 * 1024 / 3, 8.0 * 1024 / 3 * 0.35);
}

// Three steps into a run (what the live window judges first), a warm-up that grew in the
// first two and not the third is not yet a leak; one that grew in the first and the third is.
TEST(Leaks, AfterThreeStepsTwoRisesAndAFlatStepAreAWarmUp) {
  for (const bool rises_last : {false, true}) {
    Script sc;
    uint64_t addr = 0x1000'0000;
    run_steps(sc, 3, [&](int s, int64_t t0) {
      if (s == 1 || s == (rises_last ? 3 : 2)) {
        sc.malloc(t0 + 1, addr, kMiB, {"state"});
        addr += kMiB;
      }
    });
    BlockAnalyzer a(sc.strings);
    sc.feed(a);
    const LeakResult r = a.leaks(100, kHostDevice);
    ASSERT_TRUE(r.step_based);
    EXPECT_EQ(r.owner_suspects.size(), rises_last ? 1u : 0u) << "rises last: " << rises_last;
  }
}

TEST(Leaks, OnlyTheLastKStepsAreJudged) {
  // Grew in steps 1..13, flat in 14 and 15: 3 of the last 5 grew (60%), 10 of the last
  // 12 (83%).
  Script sc;
  uint64_t addr = 0x1000'0000;
  run_steps(sc, 15, [&](int s, int64_t t0) {
    if (s <= 13) {
      sc.malloc(t0 + 1, addr, kMiB, {"warmup"});
      addr += kMiB;
    }
  });
  BlockAnalyzerOptions o;
  o.leaks.window_steps = 5;
  BlockAnalyzer a(sc.strings, o);
  sc.feed(a);
  EXPECT_TRUE(a.leaks(100, kHostDevice).owner_suspects.empty());

  BlockAnalyzerOptions wide;
  wide.leaks.window_steps = 12;
  BlockAnalyzer b(sc.strings, wide);
  b.add(sc.events.data(), sc.events.size());
  const LeakResult r = b.leaks(100, kHostDevice);
  ASSERT_EQ(r.owner_suspects.size(), 1u);
  EXPECT_EQ(r.owner_suspects[0].growth_start_step, 1u);
}

TEST(Leaks, TooFewStepsGiveNoStepVerdict) {
  Script sc;
  uint64_t addr = 0x1000'0000;
  run_steps(sc, 2, [&](int, int64_t t0) {
    sc.malloc(t0 + 1, addr, kMiB, {"x"});
    addr += kMiB;
  });
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  EXPECT_EQ(r.steps, 3u);
  EXPECT_FALSE(r.step_based);
  EXPECT_TRUE(r.owner_suspects.empty());
}

TEST(Leaks, WithoutStepsBlocksAliveAtTheEndAreGroupedAndTheTrendMeasured) {
  Script sc;
  // One MiB a second for ten seconds, never freed, from two stacks.
  for (int i = 0; i < 10; ++i) {
    const bool a = i % 3 != 0;  // i = 0, 3, 6, 9 from stack B
    sc.malloc(int64_t(i) * kStepNs, 0x1000'0000 + i * kMiB, kMiB,
              {a ? "cache" : "buffers", a ? "a.py(1): f" : "b.py(2): g", "aten::empty"});
  }
  sc.malloc(500, 0x9000'0000, 7 * kMiB, {"temp", "t.py(3): h"});
  sc.free(600, 0x9000'0000);
  sc.malloc(10 * kStepNs, 0x9100'0000, 1, {"end", "e.py(1): e"});  // "now" = 10 s
  sc.free(10 * kStepNs, 0x9100'0000);
  BlockAnalyzer a(sc.strings);
  sc.feed(a);
  const LeakResult r = a.leaks(100, kHostDevice);
  EXPECT_EQ(r.steps, 0u);
  EXPECT_FALSE(r.step_based);
  EXPECT_EQ(r.alive_bytes, 10 * kMiB);
  EXPECT_EQ(r.alive_blocks, 10u);
  ASSERT_EQ(r.alive_by_stack.size(), 2u);
  EXPECT_EQ(r.alive_by_stack[0].key.label, "a.py(1): f");
  EXPECT_EQ(r.alive_by_stack[0].bytes, 6 * kMiB);
  EXPECT_EQ(r.alive_by_stack[0].blocks, 6u);
  EXPECT_EQ(r.alive_by_stack[1].key.label, "b.py(2): g");
  EXPECT_EQ(r.alive_by_stack[1].blocks, 4u);
  ASSERT_EQ(r.alive_by_owner.size(), 2u);
  EXPECT_EQ(r.alive_by_owner[0].key.label, "cache");
  ASSERT_EQ(r.alive_by_name.size(), 1u);
  EXPECT_EQ(r.alive_by_name[0].bytes, 10 * kMiB);
  // A staircase 1..10 MiB over [0, 10 s) has the least-squares slope (1 - 1/10^2) MiB/s;
  // the 7 MiB held for 100 ns at the start moves it by less than a byte per second.
  EXPECT_EQ(r.trend_span_ns, 10 * kStepNs);
  EXPECT_NEAR(r.trend_bytes_per_s, 0.99 * double(kMiB), 1.0);
}

}  // namespace
}  // namespace memtap::blocks::test
