// The frame-pointer walk of C stacks (agent/unwind.cpp) where what it learnt must not be
// trusted: `memtap run --stacks c` on programs built with frame pointers and debug
// information, each stack read back from Call Stack(C) and its frames named by function.
//
// Pinned:
//  - a library built with frame pointers, used (its return addresses learnt: "steps") and
//    dlclose()d, then the same source built without frame pointers mapped at the same
//    address: the second library's stacks name unload_leaf, unload_middle, unload_entry
//    and main, as the first's do (a stale verdict would step from unload_leaf to main); with
//    the default unwinding and with libunwind alone (MEMTAP_UNWIND=libunwind), whose own
//    per-thread cache remembers the first library's frames.
//  - a function that overwrites its own saved caller's rbp (with 0x10, an unaligned address
//    on the stack, an address below its frame, one above it past user space) for one
//    allocation, after its return addresses were learnt: the program runs to its end, and the
//    allocation's stack names the function and main, where the walk stops (libunwind, stepping
//    through the same rbp, would crash).
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/e2e/c_stack_frames.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kUnloadProgram = MEMTAP_TEST_C_STACK_UNLOAD;
const std::string kUnloadFp = MEMTAP_TEST_UNLOAD_FP;
const std::string kUnloadNoFp = MEMTAP_TEST_UNLOAD_NOFP;
const std::string kBogusFp = MEMTAP_TEST_C_STACK_BOGUS_FP;
// c_stack_unload.c's sizes, plus the 2 its library adds; kRounds blocks of each.
constexpr int64_t kFpBytes = 2 * 1024 * 1024 + 100 + 2;
constexpr int64_t kNoFpBytes = 2 * 1024 * 1024 + 200 + 2;
constexpr size_t kRounds = 3;
// c_stack_bogus_fp.c's sizes: kNormalRounds blocks a call; one of kBogusBytes + kind.
constexpr int64_t kNormalBytes = 2 * 1024 * 1024 + 300;
constexpr int64_t kBogusBytes = 2 * 1024 * 1024 + 400;
constexpr size_t kNormalRounds = 3, kBogusKinds = 4;

class CStackWalk : public ::testing::Test {
 protected:
  // `memtap run --stacks c` of `argv` (with `env` set); fails the test unless it exits 0.
  // Its stdout.
  std::string run_with_c_stacks(const std::string& db, const std::vector<std::string>& argv,
                                const std::vector<std::string>& env = {}) {
    std::vector<std::string> command = {kMemtapBin, "run", "--stacks", "c", "--stack-min-size",
                                        "1MiB",     "-o",  db,         "--"};
    command.insert(command.end(), argv.begin(), argv.end());
    ProcessSpec spec = spec_in(dir_, command);
    spec.env_set.insert(spec.env_set.end(), env.begin(), env.end());
    ProcessResult r = run_process(spec, kProcessTimeout);
    EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
    return r.out;
  }

  // c_stack_unload with `env`: every stack of both libraries names its three functions and
  // main.
  void expect_unload_stacks(const std::vector<std::string>& env);

  TempDir dir_;
};

// The address printed after "LABEL base " in `out`; 0 when missing.
uint64_t base_in(const std::string& out, const std::string& label) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("(^|\n)" + label + " base 0x([0-9a-f]+)\n"))) return 0;
  return std::stoull(m[2].str(), nullptr, 16);
}

void CStackWalk::expect_unload_stacks(const std::vector<std::string>& env) {
  const std::string db = dir_.file("unload.db");
  const std::string out = run_with_c_stacks(db, {kUnloadProgram, kUnloadFp, kUnloadNoFp}, env);
  ASSERT_NE(out.find("c_stack_unload ok"), std::string::npos) << out;
  // The premise: the loader maps the second library where the first was.
  ASSERT_NE(base_in(out, "fp"), 0u) << out;
  ASSERT_EQ(base_in(out, "fp"), base_in(out, "nofp")) << out;

  const std::string program = real_path(kUnloadProgram);
  uint64_t leaf_offset[2] = {0, 0};
  const std::pair<std::string, int64_t> libraries[] = {{kUnloadFp, kFpBytes},
                                                       {kUnloadNoFp, kNoFpBytes}};
  for (int which = 0; which < 2; ++which) {
    const std::string library = real_path(libraries[which].first);
    SCOPED_TRACE(library);
    std::vector<std::string> stacks = c_stacks_of_size(db, libraries[which].second);
    ASSERT_EQ(stacks.size(), kRounds);
    for (const std::string& stack : stacks) {
      std::vector<CFrame> frames = c_frames_of(stack);
      ASSERT_GE(frames.size(), 4u) << stack;
      const char* expected[] = {"unload_leaf", "unload_middle", "unload_entry"};
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(frames[i].function, expected[i]) << stack;
        // The first library's stacks often reach the monitor in the batch that reports the
        // second library over the same range, and are named in it: same functions, the
        // other path (the monitor's matter, not the walk's).
        if (which == 1) {
          EXPECT_EQ(frames[i].module, library) << stack;
        }
      }
      EXPECT_EQ(frames[3].function, "main") << stack;
      EXPECT_EQ(frames[3].module, program) << stack;
      leaf_offset[which] = frames[0].offset;
    }
  }
  // The premise: the two builds return to unload_leaf at the same address, so a verdict
  // learnt in the first would be found for the second.
  EXPECT_EQ(leaf_offset[0], leaf_offset[1]);
}

TEST_F(CStackWalk, VerdictsOfAnUnloadedLibraryAreNotTrustedInTheOneMappedThereAfter) {
  expect_unload_stacks({});
}

// libunwind alone: its own per-thread cache of how to step past each return address holds
// the first library's steps, which the agent cannot flush.
TEST_F(CStackWalk, LibunwindAloneIsNotMisledByTheUnloadedLibrary) {
  expect_unload_stacks({"MEMTAP_UNWIND=libunwind"});
}

TEST_F(CStackWalk, BrokenFrameRecordEndsTheWalkWithoutACrash) {
  const std::string db = dir_.file("bogus.db");
  const std::string out = run_with_c_stacks(db, {kBogusFp});
  ASSERT_NE(out.find("c_stack_bogus_fp ok"), std::string::npos) << out;

  const std::string program = real_path(kBogusFp);
  std::vector<std::string> normal = c_stacks_of_size(db, kNormalBytes);
  EXPECT_EQ(normal.size(), kNormalRounds * kBogusKinds);
  for (const std::string& stack : normal) {
    std::vector<CFrame> frames = c_frames_of(stack);
    ASSERT_GE(frames.size(), 3u) << stack;  // and libc's frames below main
    EXPECT_EQ(frames[0].function, "allocate_with_bogus_record") << stack;
    EXPECT_EQ(frames[1].function, "main") << stack;
  }
  for (int64_t kind = 0; kind < int64_t(kBogusKinds); ++kind) {
    SCOPED_TRACE(kind);
    std::vector<std::string> bogus = c_stacks_of_size(db, kBogusBytes + kind);
    ASSERT_EQ(bogus.size(), 1u);
    std::vector<CFrame> frames = c_frames_of(bogus[0]);
    // The walk ends at main: nothing is read through the broken record.
    ASSERT_EQ(frames.size(), 2u) << bogus[0];
    EXPECT_EQ(frames[0].function, "allocate_with_bogus_record") << bogus[0];
    EXPECT_EQ(frames[0].module, program) << bogus[0];
    EXPECT_EQ(frames[1].function, "main") << bogus[0];
  }
}

}  // namespace
}  // namespace memtap::e2e
