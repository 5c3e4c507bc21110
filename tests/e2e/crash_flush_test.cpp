// A program that dies by a signal right after allocating (tests/programs/crash.c): the
// agent's handler flushes the buffers first (agent/crash_flush.cpp), so every allocation
// is in the recording, and the program still dies as it does without memtap: the same
// signal (`memtap run` exits with 128 + its number, as a shell reports it), the same output.
#include <gtest/gtest.h>
#include <signal.h>
#include <string.h>

#include <string>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kCrash = MEMTAP_TEST_CRASH;
const std::string kPriorHandler = MEMTAP_TEST_PRIOR_HANDLER;
constexpr int kBlocks = 1000;
constexpr int kFirstSize = 20011;  // crash.c: block i has kFirstSize + 2 * i bytes

class CrashFlush : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  // The program alone, then under `memtap run`: it dies by `sig` both times with the same
  // output, and the recording has each of its blocks once. `env`: for both runs.
  // `flushed_sig`: the signal the agent's flush ran for, when not `sig`.
  void expect_flushed(const std::string& mode, int sig, const std::vector<std::string>& env = {},
                      int flushed_sig = 0) {
    if (flushed_sig == 0) flushed_sig = sig;
    const std::vector<std::string> argv = {kCrash, mode, std::to_string(kBlocks)};
    ProcessSpec alone = spec_in(dir, argv);
    alone.env_set.insert(alone.env_set.end(), env.begin(), env.end());
    ProcessResult plain = run_process(alone, kProcessTimeout);
    ASSERT_EQ(plain.term_signal, sig) << describe(plain) << "\nstderr:\n" << plain.err;
    ASSERT_EQ(plain.out, "allocated " + std::to_string(kBlocks) + "\n");

    const std::string db = dir.file(mode + ".db");
    std::vector<std::string> cmd = {kMemtapBin, "run", "-o", db, "--"};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    ProcessSpec under_memtap = spec_in(dir, cmd);
    under_memtap.env_set.insert(under_memtap.env_set.end(), env.begin(), env.end());
    ProcessResult traced = run_process(under_memtap, kProcessTimeout);
    ASSERT_TRUE(traced.exited) << describe(traced) << "\nstderr:\n" << traced.err;
    EXPECT_EQ(traced.exit_code, 128 + sig) << "stderr:\n" << traced.err;
    EXPECT_EQ(traced.out, plain.out);
    // memtap's own lines (its summary) are in the same stream, after the program's.
    EXPECT_EQ(traced.err.find(plain.err), 0u) << "stderr:\n" << traced.err;
    EXPECT_EQ(traced.err.find("memtap agent"), std::string::npos) << traced.err;

    std::string error;
    std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
    ASSERT_TRUE(q) << error;
    const std::string size = "CAST(json_extract(Attr, '$.size') AS INTEGER)";
    const std::string blocks =
        "SELECT " + size + " AS s FROM memscope_dump WHERE Event = 'MALLOC' AND s BETWEEN " +
        std::to_string(kFirstSize) + " AND " + std::to_string(kFirstSize + 2 * (kBlocks - 1)) +
        " AND (s - " + std::to_string(kFirstSize) + ") % 2 = 0";
    EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM (" + blocks + ")"), kBlocks) << "stderr:\n"
                                                                               << traced.err;
    EXPECT_EQ(q->scalar_int("SELECT COUNT(DISTINCT s) FROM (" + blocks + ")"), kBlocks);
    // The agent's Bye says which signal it flushed for: the program's, or the SIGABRT its own
    // handler ended with.
    DbRows ended;
    ASSERT_TRUE(q->query("SELECT ended_by FROM memtap_session", {}, &ended, &error)) << error;
    ASSERT_EQ(ended.rows.size(), 1u);
    EXPECT_EQ(ended.rows[0][0].text, std::string("signal SIG") + sigabbrev_np(flushed_sig));
  }

  TempDir dir;
};

TEST_F(CrashFlush, AbortRightAfterAllocating) {
  expect_flushed("abort", SIGABRT);
}

TEST_F(CrashFlush, SegfaultRightAfterAllocating) {
  expect_flushed("segv", SIGSEGV);
}

// SIGTERM and SIGINT are left as they were: CPython answers signal.getsignal() with None for
// a handler it did not install, and the common "save, replace, restore" code would then pass
// None to signal.signal(), a TypeError in the program.
TEST_F(CrashFlush, PythonStillSeesTheDefaultSigtermAndSigint) {
  const std::string check =
      "import signal, sys\n"
      "ok = all(signal.getsignal(s) is not None for s in (signal.SIGTERM, signal.SIGINT))\n"
      "old = signal.getsignal(signal.SIGTERM)\n"
      "signal.signal(signal.SIGTERM, lambda *a: None)\n"
      "signal.signal(signal.SIGTERM, old)\n"
      "sys.exit(0 if ok else 3)\n";
  ProcessResult r = run_process(spec_in(dir, {kMemtapBin, "run", "-o", dir.file("py.db"), "--",
                                              "/usr/bin/python3", "-c", check}),
                                kProcessTimeout);
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 0) << "stderr:\n" << r.err;
}

// The fault comes with no stack left: the handler runs on the main thread's alternate stack.
TEST_F(CrashFlush, StackOverflowOnTheMainThread) {
  expect_flushed("overflow", SIGSEGV);
}

// A handler in place before the agent started is chained after the flush: it runs, and
// the process ends as that handler makes it end. (`memtap run` puts the agent first in
// LD_PRELOAD, so the library's constructor runs before the agent's.)
TEST_F(CrashFlush, HandlerInstalledBeforeTheAgentIsChained) {
  expect_flushed("segv", SIGSEGV, {"LD_PRELOAD=" + kPriorHandler});
}

// The program's own SIGSEGV handler, installed after start-up, replaces the agent's and runs
// as without memtap; the abort() it ends with is flushed by the agent's SIGABRT handler.
TEST_F(CrashFlush, ProgramHandlerInstalledLaterStillRuns) {
  expect_flushed("handler", SIGABRT);
}

}  // namespace
}  // namespace memtap::e2e
