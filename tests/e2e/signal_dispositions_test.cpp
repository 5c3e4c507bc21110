// The program sees its own signal dispositions under memtap, though the agent's handler
// stands in for several of them in the kernel (agent/signal_dispositions.h): every libc
// entry point that sets or reads one answers as without memtap, and signals reach the
// program's handlers as they would (tests/programs/dispositions.c prints all of it).
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kDispositions = MEMTAP_TEST_DISPOSITIONS;

TEST(SignalDispositions, ReadBackAndDeliveredAsWithoutMemtap) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ProcessResult plain = run_process(spec_in(dir, {kDispositions}), kProcessTimeout);
  ASSERT_TRUE(plain.exited && plain.exit_code == 0) << describe(plain) << "\n" << plain.err;
  // What the comparison rests on, as the kernel answers without memtap.
  ASSERT_NE(plain.out.find("SIGTERM at start: returned -; now handler=SIG_DFL flags=0x0"),
            std::string::npos)
      << plain.out;
  ASSERT_NE(plain.out.find("SIGSEGV h2 raised once: returned raised, 1 handler call(s); now "
                           "handler=SIG_DFL"),
            std::string::npos)
      << plain.out;

  ProcessResult traced =
      run_process(spec_in(dir, {kMemtapBin, "run", "-o", dir.file("d.db"), "--", kDispositions}),
                  kProcessTimeout);
  ASSERT_TRUE(traced.exited) << describe(traced) << "\n" << traced.err;
  EXPECT_EQ(traced.exit_code, 0) << traced.err;
  // Line by line, for a readable failure.
  const std::vector<std::string> want = split_lines(plain.out), got = split_lines(traced.out);
  for (size_t i = 0; i < want.size() || i < got.size(); i++) {
    ASSERT_EQ(i < got.size() ? got[i] : "(missing)", i < want.size() ? want[i] : "(extra)")
        << "line " << i + 1;
  }
}

// Two threads change SIGTERM's disposition while a third signals them, and the handler reads
// and sets it too: every answer is a handler the program set, and nothing deadlocks (a writer
// interrupted by a handler that writes the same signal on its own thread would).
TEST(SignalDispositions, SetFromSeveralThreadsAndFromTheHandler) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ProcessResult traced = run_process(
      spec_in(dir, {kMemtapBin, "run", "-o", dir.file("race.db"), "--", kDispositions, "race"}),
      kProcessTimeout);
  ASSERT_TRUE(traced.exited) << describe(traced) << "\n" << traced.err;
  EXPECT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out, "race: every answer was hA or hB\n");
}

}  // namespace
}  // namespace memtap::e2e
