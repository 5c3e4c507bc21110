// agent/unwind.cpp against glibc's backtrace() (libgcc_s's DWARF unwinder, the reference) on
// a known call chain a -> b -> c -> leaf, built once with frame pointers and once without
// (-O2 -fomit-frame-pointer, where b also zeroes rbp): the same return addresses, on the
// first capture (nothing learnt yet) and on later ones (the frame-pointer walk).
#include "agent/unwind.h"

#include <execinfo.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <stdlib.h>

#include <vector>

extern "C" {
typedef void (*Leaf)(void);
int fp_a(Leaf leaf, int depth);
int fp_c(Leaf leaf, int depth);
int nofp_a(Leaf leaf, int depth);
int nofp_c(Leaf leaf, int depth);
}

namespace memtap {
namespace {

struct Captured {
  std::vector<void*> ours;       // capture_return_addresses, from the leaf's caller
  std::vector<void*> reference;  // backtrace(), from the same frame
};

Captured* g_captured;  // the leaf has no arguments: the chain is plain C

// Both captures from one frame; each list's first address (the leaf's own call site)
// differs, the rest must not.
extern "C" __attribute__((noinline)) void capture_both() {
  void* ours[128];
  void* reference[128];
  int n = capture_return_addresses(ours, 128);
  int m = backtrace(reference, 128);
  g_captured->ours.assign(ours + 1, ours + (n > 1 ? n : 1));
  g_captured->reference.assign(reference + 1, reference + (m > 1 ? m : 1));
  __asm__ volatile("" ::: "memory");
}

Captured run_chain(int (*a)(Leaf, int)) {
  Captured c;
  g_captured = &c;
  a(capture_both, 0);
  return c;
}

// The reference's frame 0 (after capture_both) is in c: the chain is really on the stack.
void expect_chain(const Captured& c, int (*leaf_caller)(Leaf, int)) {
  ASSERT_GE(c.reference.size(), 4u);
  auto in_c =
      reinterpret_cast<uintptr_t>(c.reference[0]) - reinterpret_cast<uintptr_t>(leaf_caller);
  EXPECT_LT(in_c, 64u);
  EXPECT_EQ(c.ours, c.reference);
}

class UnwindTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("MEMTAP_UNWIND_STATS", "1", 1);  // unwind_counts() counts
    unwind_warm_up();
  }
};

TEST_F(UnwindTest, FramePointerChainMatchesBacktraceFirstAndLaterCaptures) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    expect_chain(run_chain(fp_a), fp_c);
  }
}

TEST_F(UnwindTest, ChainWithoutFramePointersMatchesBacktraceFirstAndLaterCaptures) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    expect_chain(run_chain(nofp_a), nofp_c);
  }
}

// On a thread of its own the chain's stack is this test's frames (built with frame
// pointers), the chain, and libc's start_thread/clone3 (without): after one fallback that
// learns it, the frame-pointer chain is walked; the other chain always falls back.
struct ThreadResult {
  int (*a)(Leaf, int);
  int (*c)(Leaf, int);
  uint64_t fallbacks[4];  // in each round
};

void* run_on_thread(void* arg) {
  auto* r = static_cast<ThreadResult*>(arg);
  for (uint64_t& fallbacks : r->fallbacks) {  // one call site: the same return addresses
    uint64_t before = unwind_counts().fallbacks;
    expect_chain(run_chain(r->a), r->c);
    fallbacks = unwind_counts().fallbacks - before;
  }
  return nullptr;
}

ThreadResult run_thread(int (*a)(Leaf, int), int (*c)(Leaf, int)) {
  ThreadResult r{a, c, {}};
  pthread_t thread;
  EXPECT_EQ(pthread_create(&thread, nullptr, run_on_thread, &r), 0);
  pthread_join(thread, nullptr);
  return r;
}

TEST_F(UnwindTest, FramePointerChainOnAThreadIsWalkedOnceLearnt) {
  // The second thread finds the chain's verdicts learnt, and learns its own outermost frames.
  for (int thread = 0; thread < 2; ++thread) {
    SCOPED_TRACE(thread);
    ThreadResult r = run_thread(fp_a, fp_c);
    EXPECT_EQ(r.fallbacks[0], 1u);
    EXPECT_EQ(r.fallbacks[1], 0u);
    EXPECT_EQ(r.fallbacks[3], 0u);
  }
}

TEST_F(UnwindTest, ChainWithoutFramePointersOnAThreadAlwaysFallsBack) {
  ThreadResult r = run_thread(nofp_a, nofp_c);
  for (uint64_t fallbacks : r.fallbacks) EXPECT_EQ(fallbacks, 1u);
}

// A thread's function that calls a function without frame pointers from two places, at the
// same depth: the same return address in nofp_c at the same stack slot, but a different
// caller each time. The second capture must not reuse what the first learnt of the stack
// below nofp_c.
void* two_call_sites(void* arg) {
  auto* captured = static_cast<std::vector<Captured>*>(arg);
  for (int i = 0; i < 2; ++i) {  // site 1, twice: learnt, then used
    Captured c;
    g_captured = &c;
    nofp_c(capture_both, 1);
    captured->push_back(c);
  }
  Captured c;  // site 2
  g_captured = &c;
  nofp_c(capture_both, 2);
  captured->push_back(c);
  return nullptr;
}

TEST_F(UnwindTest, StackBelowAFunctionWithoutFramePointersIsNotReusedFromAnotherCaller) {
  std::vector<Captured> captured;
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, nullptr, two_call_sites, &captured), 0);
  pthread_join(thread, nullptr);
  ASSERT_EQ(captured.size(), 3u);
  for (const Captured& c : captured) expect_chain(c, nofp_c);
  EXPECT_NE(captured[0].reference[1], captured[2].reference[1]) << "two call sites";
}

TEST_F(UnwindTest, StopsAtMax) {
  Captured c = run_chain(fp_a);
  void* few[2];
  EXPECT_EQ(capture_return_addresses(few, 2), 2);
  EXPECT_EQ(capture_return_addresses(few, 0), 0);
}

}  // namespace
}  // namespace memtap
