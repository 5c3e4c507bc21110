// C stacks symbolised in the monitor: `memtap run --stacks c` on a program built with -g
// and without exported symbols; the agent sends return addresses and the loaded modules, the
// monitor writes the frames into Call Stack(C).
//
// Pinned: every frame names its module by absolute path; the program's frames carry offsets
// that addr2line, given the program, turns into deep_leaf_alloc, deep_middle and main in
// that order, and the frames say so themselves ("deep_leaf_alloc at .../c_stack_symbols.c:N");
// a library dlopen()ed after the start (by a relative path) is named by its absolute path,
// and its frame's offset is lib_leaf_alloc's.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tests/e2e/c_stack_frames.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kProgram = MEMTAP_TEST_C_STACK_SYMBOLS;
const std::string kLibrary = MEMTAP_TEST_C_STACK_LIB;
constexpr int64_t kLeafBytes = 3 * 1024 * 1024 + 7;  // c_stack_symbols.c
constexpr int64_t kLibBytes = 2 * 1024 * 1024 + 11;  // c_stack_lib.c

// The frames of a stack that are not inlined ones; fails the test on a line of no known form.
std::vector<CFrame> frames_of(const std::string& stack) {
  std::vector<CFrame> frames = c_frames_of(stack);
  for (const CFrame& f : frames) {
    EXPECT_FALSE(f.module.empty()) << "a frame of no known form: " << f.text << "\nin:\n" << stack;
  }
  return frames;
}

class CStackSymbols : public ::testing::Test {
 protected:
  // The Call Stack(C) of the one MALLOC of `size` bytes.
  std::string c_stack_of(const std::string& db, int64_t size) {
    const std::vector<std::string> stacks = c_stacks_of_size(db, size);
    EXPECT_EQ(stacks.size(), 1u) << "the block of " << size << " bytes";
    return stacks.empty() ? std::string() : stacks[0];
  }

  TempDir dir_;
};

TEST_F(CStackSymbols, FramesNameTheProgramAndTheDlopenedLibraryByPathAndOffset) {
  const std::string db = dir_.file("c_stacks.db");
  // The library by a path relative to the program's working directory: the loader keeps it
  // as given, the agent reports it absolute.
  const std::string library_dir = kLibrary.substr(0, kLibrary.rfind('/'));
  const std::string library_name = kLibrary.substr(kLibrary.rfind('/') + 1);
  ProcessSpec spec = spec_in(dir_, {kMemtapBin, "run", "--stacks", "c", "--stack-min-size", "1MiB",
                                    "-o", db, "--", kProgram, "./" + library_name});
  spec.cwd = library_dir;
  ProcessResult r = run_process(spec, kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  EXPECT_NE(r.out.find("c_stack_symbols ok"), std::string::npos) << r.out;

  const std::string program = real_path(kProgram);
  const std::string stack = c_stack_of(db, kLeafBytes);
  std::vector<CFrame> frames = frames_of(stack);
  ASSERT_GE(frames.size(), 3u) << stack;
  for (const CFrame& f : frames) {
    EXPECT_TRUE(f.module == "[vdso]" || (!f.module.empty() && f.module[0] == '/'))
        << "module path not absolute: " << f.text;
  }
  // Innermost first, the agent's own frames left out: the caller of malloc comes first.
  const char* expected[] = {"deep_leaf_alloc", "deep_middle", "main"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(frames[i].module, program) << frames[i].text;
    EXPECT_EQ(function_at(program, frames[i].offset), expected[i]) << frames[i].text;
  }
  // The program is built with -g: each frame names its function and source line (libdw).
  const std::regex leaf(R"(^deep_leaf_alloc at /.*c_stack_symbols\.c:[0-9]+ \(.*\)$)");
  EXPECT_TRUE(std::regex_match(frames[0].text, leaf)) << frames[0].text;
  EXPECT_EQ(frames[1].text.rfind("deep_middle at ", 0), 0u) << frames[1].text;
  EXPECT_EQ(frames[2].text.rfind("main at ", 0), 0u) << frames[2].text;

  const std::string library = real_path(kLibrary);
  const std::string lib_stack = c_stack_of(db, kLibBytes);
  std::vector<CFrame> lib_frames = frames_of(lib_stack);
  ASSERT_GE(lib_frames.size(), 2u) << lib_stack;
  EXPECT_EQ(lib_frames[0].module, library) << lib_frames[0].text;
  EXPECT_EQ(function_at(library, lib_frames[0].offset), "lib_leaf_alloc") << lib_frames[0].text;
  EXPECT_EQ(lib_frames[0].text.rfind("lib_leaf_alloc at ", 0), 0u) << lib_frames[0].text;
  EXPECT_EQ(lib_frames[1].module, program) << lib_frames[1].text;
  EXPECT_EQ(function_at(program, lib_frames[1].offset), "main") << lib_frames[1].text;
}

}  // namespace
}  // namespace memtap::e2e
