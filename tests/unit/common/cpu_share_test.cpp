// The pacing of memtap's threads behind the program (common/cpu_share.h): its accounting,
// driven with given clock readings, so that nothing here depends on the machine's load.
#include "common/cpu_share.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/unit/common/burn_cpu.h"

namespace memtap {
namespace {

constexpr uint64_t kMs = 1'000'000;

bool busy() {
  return true;
}
bool idle() {
  return false;
}

// Makes `share` a share of `permille`, limited (the program runs).
void limit(CpuShare* share, uint32_t permille) {
  share->limited = true;
  share->permille = permille;
}

TEST(CpuPacer, AThreadOverItsShareOnBusyCoresWaitsUntilItIsBackWithinIt) {
  CpuShare share;  // a tenth of a core
  limit(&share, 100);
  CpuPacer pacer(&share);
  EXPECT_EQ(pacer.owed_wait_ns(1000 * kMs, 0, busy), 0);  // the first call only starts
  // 100 ms of CPU in 100 ms: 10 ms was its share, 20 ms of burst; 70 ms overdrawn takes
  // 700 ms at a tenth of a core to pay back.
  EXPECT_EQ(pacer.owed_wait_ns(1100 * kMs, 100 * kMs, busy), 700 * kMs);
  // After those 700 ms, with no more CPU used, it owes nothing.
  EXPECT_EQ(pacer.owed_wait_ns(1800 * kMs, 100 * kMs, busy), 0);
}

// A share is a rate: the time since the last call earns at the share that held then, and a
// new share applies from now on. Charged at the new one, the catch-up thread's round at half
// a core owed seconds once a look saw the program's own threads fill the cores for a moment.
TEST(CpuPacer, AShareThatChangesAppliesFromThenOn) {
  CpuShare share;
  limit(&share, 500);
  CpuPacer pacer(&share);
  EXPECT_EQ(pacer.owed_wait_ns(1000 * kMs, 0, busy), 0);
  // 150 ms of CPU in 600 ms at half a core: within it, though the share is now 2.5 %.
  share.permille = 25;
  EXPECT_EQ(pacer.owed_wait_ns(1600 * kMs, 150 * kMs, busy), 0);
  // From here 2.5 %: 100 ms of CPU in 100 ms is 97.5 ms over, less the 20 ms burst left...
  EXPECT_EQ(pacer.owed_wait_ns(1700 * kMs, 250 * kMs, busy), 3100 * kMs);
  // ...and once the share is half a core again, what is still owed (75 ms: the 100 ms since
  // earned at 2.5 %) is paid back at that.
  share.permille = 500;
  EXPECT_EQ(pacer.owed_wait_ns(1800 * kMs, 250 * kMs, busy), 150 * kMs);
}

TEST(CpuPacer, WithinItsShareAThreadNeverWaits) {
  CpuShare share;
  limit(&share, 100);
  CpuPacer pacer(&share);
  pacer.owed_wait_ns(1000 * kMs, 0, busy);
  uint64_t cpu = 0;
  for (uint64_t wall = 1000 * kMs; wall < 3000 * kMs; wall += 10 * kMs) {
    cpu += kMs;  // 1 ms of CPU every 10 ms: exactly its share
    EXPECT_EQ(pacer.owed_wait_ns(wall + 10 * kMs, cpu, busy), 0) << "at " << wall / kMs << " ms";
  }
}

TEST(CpuPacer, AnIdleCoreIsTakenAsANice19ThreadWould) {
  CpuShare share;
  limit(&share, 100);
  CpuPacer pacer(&share);
  pacer.owed_wait_ns(1000 * kMs, 0, idle);
  EXPECT_EQ(pacer.owed_wait_ns(1100 * kMs, 100 * kMs, idle), 0);
  // And the overdraft is forgiven, not kept for when the cores are busy again.
  EXPECT_EQ(pacer.owed_wait_ns(1110 * kMs, 101 * kMs, busy), 0);
}

TEST(CpuPacer, OnceTheProgramHasEndedNothingWaits) {
  CpuShare share;
  limit(&share, 100);
  CpuPacer pacer(&share);
  pacer.owed_wait_ns(1000 * kMs, 0, busy);
  share.limited = false;
  EXPECT_EQ(pacer.owed_wait_ns(1100 * kMs, 100 * kMs, busy), 0);
  EXPECT_EQ(pacer.owed_wait_ns(1200 * kMs, 200 * kMs, busy), 0);
  // A program running again (the window's next run) starts from a full burst.
  share.limited = true;
  EXPECT_EQ(pacer.owed_wait_ns(1300 * kMs, 300 * kMs, busy), 0);
  EXPECT_EQ(pacer.owed_wait_ns(1310 * kMs, 320 * kMs, busy), 0);  // 20 ms of burst
  EXPECT_GT(pacer.owed_wait_ns(1320 * kMs, 330 * kMs, busy), 0);
}

TEST(CpuPacer, TimeSpentIdleDoesNotBuyMoreThanTheBurst) {
  CpuShare share;
  limit(&share, 100);
  CpuPacer pacer(&share);
  pacer.owed_wait_ns(1000 * kMs, 0, busy);
  // An hour without work, then 50 ms of CPU at once: only the 20 ms burst (plus the 5 ms
  // earned during the 50 ms) was saved, so 25 ms is owed: 250 ms at a tenth of a core.
  const uint64_t later = 1000 * kMs + 3600'000 * kMs;
  EXPECT_EQ(pacer.owed_wait_ns(later, 0, busy), 0);
  EXPECT_EQ(pacer.owed_wait_ns(later + 50 * kMs, 50 * kMs, busy), 250 * kMs);
}

TEST(CpuPacer, AThreadOthersWaitOnOwesNothingForWhatItUsesMeanwhile) {
  CpuShare share;
  limit(&share, 100);
  CpuPacer pacer(&share);
  pacer.owed_wait_ns(1000 * kMs, 0, busy);
  // 100 ms of CPU in 100 ms would owe 700 ms (above); used while the receiving thread
  // waited on it, it is forgiven, and the burst starts from nothing.
  pacer.waited_on(1100 * kMs, 100 * kMs);
  EXPECT_EQ(pacer.owed_wait_ns(1100 * kMs, 100 * kMs, busy), 0);
  // From then on it keeps to its share again: 10 ms more in 10 ms owes 9 ms, 90 ms of wait.
  EXPECT_EQ(pacer.owed_wait_ns(1110 * kMs, 110 * kMs, busy), 90 * kMs);
}

TEST(CpuPacer, AThreadThatIsWaitedOnDoesNotWait) {
  CpuShare share;
  limit(&share, 100);  // a tenth of a core, and the cores always busy
  share.cores_busy = busy;
  std::atomic<bool> waited_on{true};
  CpuPacer pacer(&share);
  // 30 ms of CPU at a time is over the share after the first: each would wait ~70 ms or more.
  for (int i = 0; i < 4; ++i) {
    test::burn_cpu(std::chrono::milliseconds(30));
    pacer.pace(&waited_on);
  }
  EXPECT_EQ(pacer.waits(), 0u);
  // Nobody waiting on it any more: it keeps to its share again.
  waited_on = false;
  test::burn_cpu(std::chrono::milliseconds(30));
  pacer.pace(&waited_on);
  EXPECT_GT(pacer.waits(), 0u);
}

TEST(CpuShare, OnlyOtherProcessesWorkMakesTheCoresBusy) {
  // Two CPUs: a one-thread program and memtap's receiving thread leave them not busy...
  EXPECT_FALSE(others_fill_the_cores(/*runnable=*/3, /*mine=*/2, /*cpus=*/2));
  // ...two busy loops beside the program do.
  EXPECT_TRUE(others_fill_the_cores(4, 1, 2));
  // The caller itself is never others' work, even when its own count could not be read.
  EXPECT_FALSE(others_fill_the_cores(2, -1, 2));
  EXPECT_TRUE(others_fill_the_cores(3, -1, 2));
}

TEST(CpuShare, ThisProcessesRunnableThreadsAreCounted) {
  std::atomic<bool> started{false}, stop{false};
  std::thread spinner([&] {
    started = true;
    while (!stop.load()) {
    }
  });
  while (!started.load()) {
  }
  // The caller and the spinner are both running or runnable: a spinning thread never sleeps.
  const int runnable = my_runnable_threads();
  stop = true;
  spinner.join();
  EXPECT_GE(runnable, 2);
}

TEST(CpuPacer, NoShareNeverPaces) {
  CpuPacer pacer(nullptr);
  pacer.pace();  // returns at once, with nothing to follow
  SUCCEED();
}

TEST(CpuShare, TheShareRisesWithTheBacklogFromTheMinimumToTheMaximum) {
  const uint32_t min = CpuShare::kMinPermille, max = CpuShare::kMaxPermille;
  EXPECT_EQ(share_for_backlog(min, 0.0), min);
  EXPECT_EQ(share_for_backlog(min, 1.0), min + (max - min) / 2);
  EXPECT_EQ(share_for_backlog(min, 2.0), max);
  EXPECT_EQ(share_for_backlog(min, 1000.0), max);
  EXPECT_EQ(share_for_backlog(800, 0.0), 800u);  // a minimum above the maximum wins
  EXPECT_EQ(share_for_backlog(800, 20.0), 800u);
}

TEST(CpuShare, WhileTheProgramFillsEveryCoreTheShareStaysAtTheMinimumForABurstOnly) {
  const uint32_t min = CpuShare::kMinPermille, max = CpuShare::kMaxPermille;
  // A two-thread program on two cores: the program first while memtap is less than the
  // patience behind, whatever else runs.
  EXPECT_EQ(share_while_running(min, 5.0, /*program=*/2, /*others=*/0, /*cpus=*/2), min);
  EXPECT_EQ(share_while_running(min, 5.0, 3, 2, 2), min);
  EXPECT_EQ(share_while_running(min, kPatienceSeconds, 2, 0, 2), min);
  // Further behind, the share rises as the backlog rule's does past the patience, so that
  // memtap never falls arbitrarily behind a program that keeps every core busy for long.
  EXPECT_EQ(share_while_running(min, kPatienceSeconds + 1.0, 2, 0, 2), share_for_backlog(min, 1.0));
  EXPECT_GT(share_for_backlog(min, 1.0), min);
  EXPECT_EQ(share_while_running(min, kPatienceSeconds + 60.0, 2, 0, 2), max);
  EXPECT_EQ(share_while_running(min, kPatienceSeconds + 60.0, 3, 2, 2), max);
}

// The window's own threads (its drawing, its block index) stay at the minimum while the
// program's threads fill the cores, whatever the backlog raised the recording's share to;
// beside other work, or with a core to spare, they keep to the recording's share.
TEST(CpuShare, TheWindowsThreadsKeepToTheMinimumWhileTheProgramFillsTheCores) {
  const uint32_t min = CpuShare::kMinPermille, max = CpuShare::kMaxPermille;
  EXPECT_EQ(view_share(max, min, /*program=*/2, /*cpus=*/2), min);
  EXPECT_EQ(view_share(min, min, 3, 2), min);
  EXPECT_EQ(view_share(10, min, 2, 2), 10u);  // never above the recording's
  EXPECT_EQ(view_share(max, min, 1, 2), max);
  EXPECT_EQ(view_share(300, min, 0, 2), 300u);
}

TEST(CpuPacer, AThreadOfTheWindowKeepsToTheWindowsShare) {
  CpuShare share;
  limit(&share, 500);
  share.view_permille = 100;
  CpuPacer recording(&share);
  CpuPacer window(&share, CpuPacer::Follows::kView);
  recording.owed_wait_ns(1000 * kMs, 0, busy);
  window.owed_wait_ns(1000 * kMs, 0, busy);
  // 100 ms of CPU in 100 ms, 20 ms of burst: at half a core 30 ms over, paid back in 60 ms;
  // at a tenth of a core 70 ms over, in 700 ms.
  EXPECT_EQ(recording.owed_wait_ns(1100 * kMs, 100 * kMs, busy), 60 * kMs);
  EXPECT_EQ(window.owed_wait_ns(1100 * kMs, 100 * kMs, busy), 700 * kMs);
}

TEST(CpuShare, BesideOtherWorkThatFillsTheCoresMemtapTakesTheMaximumAtOnce) {
  const uint32_t min = CpuShare::kMinPermille, max = CpuShare::kMaxPermille;
  // A one-thread program and two busy loops on two cores; no backlog yet.
  EXPECT_EQ(share_while_running(min, 0.0, 1, 2, 2), max);
  EXPECT_EQ(share_while_running(min, 0.0, 0, 2, 2), max);
  EXPECT_EQ(share_while_running(800, 0.0, 1, 1, 2), 800u);  // a minimum above it wins
}

TEST(CpuShare, WithOnlyTheProgramAndMemtapTheShareFollowsTheBacklog) {
  const uint32_t min = CpuShare::kMinPermille;
  // A one-thread storm on two cores: the other core is memtap's threads'.
  EXPECT_EQ(share_while_running(min, 0.0, 1, 0, 2), min);
  EXPECT_EQ(share_while_running(min, 1.0, 1, 0, 2), share_for_backlog(min, 1.0));
  // Other work that leaves a core idle is no contest either.
  EXPECT_EQ(share_while_running(min, 1.0, 1, 1, 4), share_for_backlog(min, 1.0));
}

TEST(CpuShare, AProgramsRunnableThreadsAreCountedApartFromTheAgents) {
  const ProgramThreads before = program_runnable_threads(uint32_t(getpid()));
  EXPECT_GE(before.program, 1);  // the caller
  std::atomic<int> started{0};
  std::atomic<bool> stop{false};
  // Spinning threads never sleep: each is running or runnable whenever it is looked at.
  auto spin = [&](const char* name) {
    return std::thread([&, name] {
      pthread_setname_np(pthread_self(), name);
      ++started;
      while (!stop.load()) {
      }
    });
  };
  std::thread threads[] = {spin("worker-a"), spin("worker-b"), spin("memtap-sender"),
                           spin("7/ZMQbg/IO/0")};
  while (started.load() < 4) {
  }
  const ProgramThreads during = program_runnable_threads(uint32_t(getpid()));
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(during.program, before.program + 2) << "the two workers";
  EXPECT_EQ(during.agent, before.agent + 2) << "the threads named as the agent's";
  // A process that has ended has no threads to count.
  EXPECT_EQ(program_runnable_threads(0xfffffff0u).program, 0);
  EXPECT_EQ(program_runnable_threads(0xfffffff0u).agent, 0);
}

TEST(CpuPacer, TheCoresAreBusyAsTheLiveRecordingLastSawThem) {
  CpuShare share;
  CpuPacer pacer(&share);
  share.cores_full = 1;
  EXPECT_TRUE(pacer.busy_probe()());
  // A one-thread program on two cores, with the agent's threads on the other: not busy,
  // though /proc/loadavg less the monitor's own threads would say so.
  share.cores_full = 0;
  EXPECT_FALSE(pacer.busy_probe()());
  share.cores_full = -1;
  EXPECT_EQ(pacer.busy_probe(), &cores_busy_without_me);
  share.cores_busy = busy;  // a test's probe comes first
  share.cores_full = 0;
  EXPECT_TRUE(pacer.busy_probe()());
}

// Two busy threads on this thread's one CPU: while it does 30 ms of work it waits for the
// CPU about twice that, and the kernel's figure (the sender's starvation watch reads it)
// says so.
TEST(CpuShare, TheKernelSaysHowLongThisThreadWaitedForACore) {
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  std::atomic<bool> stop{false};
  auto spin = [&] {
    sched_setaffinity(0, sizeof one, &one);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  };
  std::thread a(spin), b(spin);
  const uint64_t before = thread_run_delay_ns();
  test::burn_cpu(std::chrono::milliseconds(30));
  const uint64_t after = thread_run_delay_ns();
  stop = true;
  a.join();
  b.join();
  sched_setaffinity(0, sizeof all, &all);  // the later tests run where they did
  EXPECT_GE(after, before + 10 * kMs) << before << " -> " << after;
}

TEST(CpuShare, TheProgramCountsAtItsMostAndOtherWorkAtItsLeastOverTheLastLooks) {
  RecentRunnable recent;
  EXPECT_EQ(recent.program(), 0);
  EXPECT_EQ(recent.others(), 0);
  // Two busy loops seen at every look, a two-thread operator at one of them.
  recent.add(1, 2);
  recent.add(2, 2);
  recent.add(1, 2);
  EXPECT_EQ(recent.others(), 0) << "not yet seen at every one of the last four looks";
  recent.add(1, 2);
  EXPECT_EQ(recent.program(), 2);
  EXPECT_EQ(recent.others(), 2);
  // A third process at one look counts for nothing more; the operator's look ages out
  // four looks after it was taken, and one look without the loops ends the contest.
  recent.add(1, 3);
  EXPECT_EQ(recent.program(), 2);
  EXPECT_EQ(recent.others(), 2);
  recent.add(1, 2);
  EXPECT_EQ(recent.program(), 1);
  EXPECT_EQ(recent.others(), 2);
  recent.add(1, 0);
  EXPECT_EQ(recent.others(), 0);
}

// One look as the catch-up thread and the monitor take it: memtap's own threads are neither
// the program's nor other work, and the cores are full when the program and other work, as
// recently seen, fill them.
TEST(CpuShare, ALookCountsOtherWorkWithoutMemtapsThreads) {
  RecentRunnable recent;
  // A one-thread program on two cores, memtap's sender and monitor running too: not full.
  EXPECT_EQ(recent.look(1, 2, 3, 2), 0);
  EXPECT_EQ(recent.program(), 1);
  EXPECT_EQ(recent.others(), 0);
  EXPECT_EQ(recent.spare_cores(2), 1);
  EXPECT_EQ(recent.spare_cores(16), 15);
  // Two busy loops besides, at every one of the last four looks: full.
  for (int i = 0; i < 3; ++i) recent.look(1, 2, 5, 2);
  EXPECT_EQ(recent.look(1, 2, 5, 2), 1);
  EXPECT_EQ(recent.others(), 2);
  EXPECT_EQ(recent.spare_cores(2), 0);  // not below
  // The machine's count unknown: nothing said, and no other work counted.
  EXPECT_EQ(recent.look(1, 0, -1, 2), -1);
  EXPECT_EQ(recent.others(), 0);
  // Counts that contradict each other (read at different instants) leave no negative work.
  RecentRunnable fresh;
  EXPECT_EQ(fresh.look(4, 3, 2, 8), 0);
  EXPECT_EQ(fresh.others(), 0);
}

// The writer leaves the CPU to the live view only where they would share a core: on two
// cores always (the rule of before), with cores to spare never.
TEST(CpuShare, TheWriterLeavesTheCpuToTheLiveViewOnlyWithoutACoreForEachThread) {
  EXPECT_TRUE(writer_leaves_the_cpu(true, true, -1));  // not known: as on few cores
  for (int spare = 0; spare < kLiveRecordingThreads; ++spare) {
    EXPECT_TRUE(writer_leaves_the_cpu(true, true, spare)) << spare;
  }
  EXPECT_FALSE(writer_leaves_the_cpu(true, true, kLiveRecordingThreads));
  EXPECT_FALSE(writer_leaves_the_cpu(true, true, 14));  // a 16-CPU GPU machine's import
  EXPECT_FALSE(writer_leaves_the_cpu(false, true, 0));  // the live view keeps up
  EXPECT_FALSE(writer_leaves_the_cpu(true, false, 0));  // the program has ended
}

}  // namespace
}  // namespace memtap
