// A program that dies by a signal right after allocating (tests/programs/crash.c): the
// agent's handler flushes the buffers first (agent/crash_flush.cpp), so every allocation
// is in the recording, and the program still dies as it does without memtap: the same
// signal (`memtap run` exits with 128 + its number, as a shell reports it), the same output.
// Its own handlers and ignored signals behave as without memtap, and it reads back the
// dispositions it set.
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
  // `flushed_sig`: the signal the agent's flush ran for, when not `sig`. `says`: a line both
  // runs write to stderr.
  void expect_flushed(const std::string& mode, int sig, const std::vector<std::string>& env = {},
                      int flushed_sig = 0, const std::string& says = "") {
    if (flushed_sig == 0) flushed_sig = sig;
    const std::vector<std::string> argv = {kCrash, mode, std::to_string(kBlocks)};
    ProcessSpec alone = spec_in(dir, argv);
    alone.env_set.insert(alone.env_set.end(), env.begin(), env.end());
    ProcessResult plain = run_process(alone, kProcessTimeout);
    ASSERT_EQ(plain.term_signal, sig) << describe(plain) << "\nstderr:\n" << plain.err;
    ASSERT_EQ(plain.out, "allocated " + std::to_string(kBlocks) + "\n");
    if (!says.empty()) {
      ASSERT_NE(plain.err.find(says + "\n"), std::string::npos) << plain.err;
    }

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

    expect_every_block(db, flushed_sig, traced.err);
  }

  // The recording at `db` has each of crash.c's blocks once, and its process ended by `sig`
  // (the agent's Bye says which signal it flushed for).
  void expect_every_block(const std::string& db, int sig, const std::string& context) {
    std::string error;
    std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
    ASSERT_TRUE(q) << error;
    const std::string size = "CAST(json_extract(Attr, '$.size') AS INTEGER)";
    const std::string blocks =
        "SELECT " + size + " AS s FROM memscope_dump WHERE Event = 'MALLOC' AND s BETWEEN " +
        std::to_string(kFirstSize) + " AND " + std::to_string(kFirstSize + 2 * (kBlocks - 1)) +
        " AND (s - " + std::to_string(kFirstSize) + ") % 2 = 0";
    EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM (" + blocks + ")"), kBlocks) << "stderr:\n"
                                                                               << context;
    EXPECT_EQ(q->scalar_int("SELECT COUNT(DISTINCT s) FROM (" + blocks + ")"), kBlocks);
    DbRows ended;
    ASSERT_TRUE(q->query("SELECT ended_by FROM memtap_session", {}, &ended, &error)) << error;
    ASSERT_EQ(ended.rows.size(), 1u);
    EXPECT_EQ(ended.rows[0][0].text, std::string("signal SIG") + sigabbrev_np(sig));
  }

  // `memtap run -o <name>.db -- argv`.
  ProcessResult run_traced(const std::string& name, const std::vector<std::string>& argv) {
    std::vector<std::string> cmd = {kMemtapBin, "run", "-o", dir.file(name + ".db"), "--"};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    return run_process(spec_in(dir, cmd), kProcessTimeout);
  }

  TempDir dir;
};

TEST_F(CrashFlush, AbortRightAfterAllocating) {
  expect_flushed("abort", SIGABRT);
}

TEST_F(CrashFlush, SegfaultRightAfterAllocating) {
  expect_flushed("segv", SIGSEGV);
}

// SIGTERM is flushed like a crash: a scheduler's SIGTERM ends many training runs.
TEST_F(CrashFlush, TermRightAfterAllocating) {
  expect_flushed("term", SIGTERM);
}

TEST_F(CrashFlush, InterruptRightAfterAllocating) {
  expect_flushed("int", SIGINT);
}

// `nohup` and a shell's background jobs start a program with SIGINT ignored: it stays
// ignored, in the shell (which records too) and in the program it execs.
TEST_F(CrashFlush, InterruptIgnoredBeforeStartStaysIgnored) {
  const std::string script = "trap '' INT; exec " + kCrash + " int " + std::to_string(kBlocks);
  ProcessResult plain = run_process(spec_in(dir, {"/bin/sh", "-c", script}), kProcessTimeout);
  ASSERT_TRUE(plain.exited) << describe(plain) << "\nstderr:\n" << plain.err;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;

  ProcessResult traced = run_traced("ignored", {"/bin/sh", "-c", script});
  ASSERT_TRUE(traced.exited) << describe(traced) << "\nstderr:\n" << traced.err;
  EXPECT_EQ(traced.exit_code, 0) << "stderr:\n" << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_NE(traced.err.find("crashing: int\ncarried on after SIGINT\n"), std::string::npos)
      << traced.err;
}

// CPython reads each disposition at start-up: it sees SIG_DFL for SIGTERM (signal.getsignal()
// would answer None for the agent's handler, which "save, replace, restore" code then passes
// to signal.signal(), a TypeError), and installs its KeyboardInterrupt handler for SIGINT.
TEST_F(CrashFlush, PythonStillSeesTheDefaultSigtermAndSigint) {
  const std::string check =
      "import signal, sys\n"
      "if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL: sys.exit(3)\n"
      "if signal.getsignal(signal.SIGINT) is not signal.default_int_handler: sys.exit(4)\n"
      "old = signal.getsignal(signal.SIGTERM)\n"
      "signal.signal(signal.SIGTERM, lambda *a: None)\n"
      "signal.signal(signal.SIGTERM, old)\n"
      "if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL: sys.exit(5)\n";
  ProcessResult r = run_traced("py", {"/usr/bin/python3", "-c", check});
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 0) << "stderr:\n" << r.err;
}

// Ctrl-C is still a KeyboardInterrupt, and a program that catches it ends as it chooses.
TEST_F(CrashFlush, PythonCatchesKeyboardInterrupt) {
  const std::string script =
      "import signal, sys\n"
      "try:\n"
      "    signal.raise_signal(signal.SIGINT)\n"
      "except KeyboardInterrupt:\n"
      "    print('caught KeyboardInterrupt')\n"
      "    sys.exit(7)\n";
  ProcessResult r = run_traced("py", {"/usr/bin/python3", "-c", script});
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 7) << "stderr:\n" << r.err;
  EXPECT_EQ(r.out, "caught KeyboardInterrupt\n");
}

// A Python program killed by SIGTERM (its default disposition) right after allocating.
TEST_F(CrashFlush, PythonKilledBySigtermRightAfterAllocating) {
  const std::string script =
      "import ctypes, os, signal\n"
      "libc = ctypes.CDLL(None)\n"
      "libc.malloc.restype = ctypes.c_void_p\n"
      "blocks = [libc.malloc(" +
      std::to_string(kFirstSize) + " + 2 * i) for i in range(" + std::to_string(kBlocks) +
      ")]\n"
      "os.kill(os.getpid(), signal.SIGTERM)\n"
      "print('still alive')\n";
  ProcessResult r = run_traced("py", {"/usr/bin/python3", "-c", script});
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << "stderr:\n" << r.err;
  EXPECT_EQ(r.out, "");
  expect_every_block(dir.file("py.db"), SIGTERM, r.err);
}

// The fault comes with no stack left: the handler runs on the main thread's alternate stack.
TEST_F(CrashFlush, StackOverflowOnTheMainThread) {
  expect_flushed("overflow", SIGSEGV);
}

// On any other thread too: each gets an alternate stack of its own when it first records.
TEST_F(CrashFlush, StackOverflowOnASecondThread) {
  expect_flushed("thread-overflow", SIGSEGV);
}

// A thread that set its own alternate stack before it allocated keeps it (the program checks
// with sigaltstack() after allocating), and the flush runs on it.
TEST_F(CrashFlush, StackOverflowOnAThreadWithItsOwnAlternateStack) {
  expect_flushed("thread-overflow-own-stack", SIGSEGV, {}, 0, "alternate stack: the program's own");
}

// A handler in place before the agent started is the program's own: it runs, and the
// process ends as that handler makes it end (it sets SIG_DFL and returns, so the fault
// comes again and is flushed). (`memtap run` puts the agent first in
// LD_PRELOAD, so the library's constructor runs before the agent's.)
TEST_F(CrashFlush, HandlerInstalledBeforeTheAgentIsChained) {
  expect_flushed("segv", SIGSEGV, {"LD_PRELOAD=" + kPriorHandler});
}

// The program's own SIGSEGV handler, installed after start-up, is what sigaction() answers
// and runs as without memtap, with no flush of its own: the abort() it ends with is flushed.
TEST_F(CrashFlush, ProgramHandlerInstalledLaterStillRuns) {
  expect_flushed("handler", SIGABRT);
}

// A handler that sets SIG_DFL and raises the signal again: the second delivery flushes.
TEST_F(CrashFlush, ProgramHandlerThatReraisesWithTheDefaultIsFlushed) {
  expect_flushed("reraise", SIGSEGV);
}

}  // namespace
}  // namespace memtap::e2e
