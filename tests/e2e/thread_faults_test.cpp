// Thread life cycles under `memtap run`, from the fault matrix: the process ended by exit()
// on a thread other than the main one, and threads created and destroyed in rounds. Each
// runs as it would without memtap, and the recording has every block.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kThreadFaults = MEMTAP_TEST_THREAD_FAULTS;

class ThreadFaults : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  // The program alone, then under `memtap run`: the same exit code and output. Returns the
  // recording, or nullptr (the test has failed).
  std::unique_ptr<DbQuery> run_both(const std::vector<std::string>& argv, int exit_code,
                                    const std::string& out) {
    ProcessResult plain = run_process(spec_in(dir, argv), kProcessTimeout);
    EXPECT_TRUE(plain.exited && plain.exit_code == exit_code) << describe(plain) << plain.err;
    EXPECT_EQ(plain.out, out);
    const std::string db = dir.file("run.db");
    std::vector<std::string> cmd = {kMemtapBin, "run", "-o", db, "--"};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    ProcessResult traced = run_process(spec_in(dir, cmd), kProcessTimeout);
    EXPECT_TRUE(traced.exited) << describe(traced) << traced.err;
    EXPECT_EQ(traced.exit_code, exit_code) << traced.err;
    EXPECT_EQ(traced.out, out);
    std::string error;
    std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
    EXPECT_TRUE(q) << error;
    return q;
  }

  TempDir dir;
};

const char kSize[] = "CAST(json_extract(Attr, '$.size') AS INTEGER)";

// exit() on the second thread runs the exit handlers there: the final flush sends what
// both threads recorded, and Bye says the status.
TEST_F(ThreadFaults, ExitFromAThreadOtherThanTheMainOne) {
  constexpr int kBlocks = 500;
  std::unique_ptr<DbQuery> q = run_both({kThreadFaults, "exit-thread", std::to_string(kBlocks)}, 3,
                                        "allocated " + std::to_string(kBlocks) + "\n");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->scalar_int(std::string("SELECT COUNT(DISTINCT ") + kSize +
                          ") FROM memscope_dump WHERE Event = 'MALLOC' AND " + kSize +
                          " BETWEEN 30011 AND " + std::to_string(30011 + 2 * (kBlocks - 1)) +
                          " AND (" + kSize + " - 30011) % 2 = 0"),
            kBlocks);
  DbRows ended;
  std::string error;
  ASSERT_TRUE(q->query("SELECT ended_by, events_dropped FROM memtap_session", {}, &ended, &error))
      << error;
  ASSERT_EQ(ended.rows.size(), 1u);
  EXPECT_EQ(ended.rows[0][0].text, "exit code 3");
  EXPECT_EQ(ended.rows[0][1].integer, 0);
}

// 40 rounds of 64 threads: the program runs as without memtap, and nothing is lost
// uncounted. A thread that exits retires its buffer, which the sender hands to the next
// thread once drained (EventBuffer.AnExitedThreadsBufferIsTheNextThreadsOnceDrained); a
// sender starved of CPU for many rounds could still let new threads reach the agent's bound
// (MEMTAP_BUFFER_MB), and their events would be dropped and counted (none on a quiet
// machine; about 8 % before buffers were retired). Every block missing from the recording is
// among the dropped events, and so is every free whose malloc is missing.
TEST_F(ThreadFaults, SixtyFourThreadsCreatedAndJoinedInRounds) {
  constexpr int kRounds = 40, kThreads = 64, kBlocks = 20;
  constexpr int kTotal = kRounds * kThreads * kBlocks;
  std::unique_ptr<DbQuery> q = run_both({kThreadFaults, "churn", std::to_string(kRounds),
                                         std::to_string(kThreads), std::to_string(kBlocks)},
                                        0, "freed " + std::to_string(kTotal) + "\n");
  ASSERT_TRUE(q);
  const int64_t blocks =
      q->scalar_int(std::string("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC' AND ") +
                    kSize + " = 40009");
  const int64_t dropped = q->scalar_int("SELECT events_dropped FROM memtap_session");
  const int64_t unmatched = q->scalar_int("SELECT unmatched_frees FROM memtap_session");
  EXPECT_LE(blocks, kTotal);
  EXPECT_GE(blocks + dropped, kTotal) << blocks << " blocks, " << dropped << " dropped";
  EXPECT_LE(unmatched, dropped);
  EXPECT_EQ(q->scalar_int("SELECT late_events FROM memtap_session"), 0);
}

// As many threads as there are CPUs, allocating at once as fast as they can: the program's
// threads fill every core, and the sender leaves their records in the buffers until a core
// is free again or the hold's 200 ms are up (agent/sender/drain_hold.h). Held or not,
// every block is recorded, none is dropped, and no event comes after the watermark that
// promised it would not (late), which would pair a free before its malloc.
TEST_F(ThreadFaults, ThreadsOnEveryCoreAllocatingAtOnceAreRecordedWhole) {
  const int cpus = std::max(2, int(sysconf(_SC_NPROCESSORS_ONLN)));
  constexpr int kBlocks = 300000;
  const int total = cpus * kBlocks;
  std::unique_ptr<DbQuery> q =
      run_both({kThreadFaults, "churn", "1", std::to_string(cpus), std::to_string(kBlocks)}, 0,
               "freed " + std::to_string(total) + "\n");
  ASSERT_TRUE(q);
  for (const char* event : {"MALLOC", "FREE"}) {
    EXPECT_EQ(q->scalar_int(std::string("SELECT COUNT(*) FROM memscope_dump WHERE Event = '") +
                            event + "' AND " + kSize + " = 40009"),
              total)
        << event;
  }
  EXPECT_EQ(q->scalar_int("SELECT events_dropped FROM memtap_session"), 0);
  EXPECT_EQ(q->scalar_int("SELECT events_lost FROM memtap_session"), 0);
  EXPECT_EQ(q->scalar_int("SELECT unmatched_frees FROM memtap_session"), 0);
  EXPECT_EQ(q->scalar_int("SELECT late_events FROM memtap_session"), 0);
}

// A signal handler that allocates, every 50 us, lands inside malloc and free and inside the
// agent's record of them: its records wait until the interrupted one is written, so none
// overwrites another, and every block is recorded or counted as dropped (only a handler
// that runs again and again before the interrupted record can go on fills what can wait).
TEST_F(ThreadFaults, SignalHandlerThatAllocatesInterruptingMalloc) {
  constexpr int kBlocks = 1000000;
  const std::string db = dir.file("run.db");
  ProcessResult traced = run_process(spec_in(dir, {kMemtapBin, "run", "-o", db, "--", kThreadFaults,
                                                   "signal-alloc", std::to_string(kBlocks)}),
                                     kProcessTimeout);
  ASSERT_TRUE(traced.exited && traced.exit_code == 0) << describe(traced) << traced.err;
  EXPECT_EQ(traced.out, "freed " + std::to_string(kBlocks) + "\n");
  const size_t at = traced.err.find("handler ran ");
  ASSERT_NE(at, std::string::npos) << traced.err;
  const int64_t runs = std::stol(traced.err.substr(at + 12));
  EXPECT_GT(runs, 200) << "too few handler runs to land inside records";
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  const int64_t blocks =
      q->scalar_int(std::string("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC' AND ") +
                    kSize + " = 777");
  const int64_t dropped = q->scalar_int("SELECT events_dropped FROM memtap_session");
  // The handler's blocks, and the one before the timer.
  EXPECT_LE(blocks, runs + 1);
  EXPECT_GE(blocks + dropped, runs + 1) << blocks << " blocks, " << dropped << " dropped";
  EXPECT_LE(q->scalar_int("SELECT unmatched_frees FROM memtap_session"), dropped);
  EXPECT_GE(q->scalar_int(std::string("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC' "
                                      "AND ") +
                          kSize + " = 64") +
                dropped,
            kBlocks + 1);
}

// Each thread gets an alternate signal stack from the agent when it first records (for the
// crash flush on a stack overflow), and gives it back when it exits: whether it still holds
// it then or has set one of its own in its place.
TEST_F(ThreadFaults, EachThreadsAlternateStackIsGivenBackAtItsExit) {
  constexpr int kThreads = 8;
  const std::vector<std::string> argv = {kThreadFaults, "alt-stacks", std::to_string(kThreads)};
  ProcessResult plain = run_process(spec_in(dir, argv), kProcessTimeout);
  ASSERT_TRUE(plain.exited && plain.exit_code == 0) << describe(plain) << plain.err;
  EXPECT_EQ(plain.out, "threads 8, with an alternate stack 0, left mapped 0\n");
  std::vector<std::string> cmd = {kMemtapBin, "run", "-o", dir.file("run.db"), "--"};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  ProcessResult traced = run_process(spec_in(dir, cmd), kProcessTimeout);
  ASSERT_TRUE(traced.exited && traced.exit_code == 0) << describe(traced) << traced.err;
  EXPECT_EQ(traced.out, "threads 8, with an alternate stack 8, left mapped 0\n");
}

}  // namespace
}  // namespace memtap::e2e
