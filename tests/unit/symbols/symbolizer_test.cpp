// The Symbolizer against real programs (fixtures/): each fixture runs as a child process and
// prints its module map and a stack's return addresses as the agent would capture them;
// the test symbolises those and checks the frames' names, files, lines and fallbacks.
#include "monitor/symbols/symbolizer.h"

#include <gtest/gtest.h>

#include <cinttypes>
#include <filesystem>
#include <map>
#include <sstream>

#include "tests/e2e/process_runner.h"

namespace memtap {
namespace {

namespace fs = std::filesystem;

const std::string kFixtureDir = MEMTAP_SYMBOLS_FIXTURE_DIR;
const std::string kSourceDir = MEMTAP_SYMBOLS_FIXTURE_SOURCE_DIR;

// What a fixture printed (fixtures/stack_print.h).
struct FixtureRun {
  std::vector<LoadedModule> modules;
  std::map<std::string, std::vector<uint64_t>> stacks;  // label -> return addresses
  std::map<std::string, int> lines;                     // function -> the line of its call
};

std::string bytes_of_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes += char(std::stoi(hex.substr(i, 2), nullptr, 16));
  return bytes;
}

FixtureRun run_fixture(const std::string& name, const std::vector<std::string>& args = {}) {
  e2e::ProcessSpec spec;
  spec.argv = {kFixtureDir + "/" + name};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  const e2e::ProcessResult result = e2e::run_process(spec);
  EXPECT_TRUE(result.exited && result.exit_code == 0)
      << name << ": " << e2e::describe(result) << "\n"
      << result.err;
  FixtureRun run;
  std::istringstream in(result.out);
  std::string kind;
  while (in >> kind) {
    if (kind == "module") {
      LoadedModule m;
      std::string id;
      in >> std::hex >> m.load_bias >> m.start >> m.end >> std::dec >> id >> m.path;
      if (id != "-") m.build_id = bytes_of_hex(id);
      run.modules.push_back(m);
    } else if (kind == "frame") {
      std::string label, address;
      in >> label >> address;
      run.stacks[label].push_back(std::stoull(address, nullptr, 16));
    } else if (kind == "line") {
      std::string function;
      in >> function >> run.lines[function];
    }
  }
  EXPECT_FALSE(run.modules.empty()) << name << " printed:\n" << result.out;
  return run;
}

std::string fixture_path(const std::string& name) {
  return fs::canonical(kFixtureDir + "/" + name).string();
}

const LoadedModule& module_named(const FixtureRun& run, const std::string& path) {
  for (const LoadedModule& m : run.modules)
    if (m.path == path) return m;
  ADD_FAILURE() << "no module " << path;
  return run.modules.front();
}

// Every frame of a stack, inlined ones included, innermost first.
std::vector<SymbolFrame> all_frames(Symbolizer& s, const std::vector<uint64_t>& stack) {
  std::vector<SymbolFrame> frames;
  for (uint64_t address : stack)
    for (const SymbolFrame& f : s.frames(address)) frames.push_back(f);
  return frames;
}

std::vector<SymbolFrame> symbolise(const FixtureRun& run, const std::string& label) {
  Symbolizer s;
  for (const LoadedModule& m : run.modules) s.add_module(m);
  EXPECT_TRUE(run.stacks.count(label)) << "no stack " << label;
  return all_frames(s, run.stacks.at(label));
}

const SymbolFrame* frame_of(const std::vector<SymbolFrame>& frames, const std::string& function) {
  for (const SymbolFrame& f : frames)
    if (f.function == function) return &f;
  return nullptr;
}

std::string hex(uint64_t v) {
  char text[24];
  snprintf(text, sizeof text, "0x%" PRIx64, v);
  return text;
}

std::string stack_dump(const std::vector<SymbolFrame>& frames) {
  std::string text;
  for (const SymbolFrame& f : frames) text += "  " + f.text + "\n";
  return text;
}

// The frame of `function` names the source line of its call, in the documented form.
void expect_source_frame(const std::vector<SymbolFrame>& frames, const std::string& function,
                         const std::string& source, int line, bool inlined) {
  const SymbolFrame* f = frame_of(frames, function);
  ASSERT_NE(f, nullptr) << "no frame of " << function << " in\n" << stack_dump(frames);
  EXPECT_EQ(f->file, kSourceDir + "/" + source);
  EXPECT_EQ(f->line, line);
  EXPECT_EQ(f->inlined, inlined);
  const std::string where =
      function + " at " + kSourceDir + "/" + source + ":" + std::to_string(line);
  EXPECT_EQ(f->text,
            inlined ? where + " (inlined)" : where + " (" + f->module + "+" + hex(f->offset) + ")");
}

TEST(SymbolizerTest, DebugInformationNamesTheFunctionAndTheLineOfTheCall) {
  const FixtureRun run = run_fixture("symbols_st_O0");
  const std::vector<SymbolFrame> frames = symbolise(run, "leaf");
  // -O0 inlines nothing: the helper is a frame of its own.
  expect_source_frame(frames, "inlined_helper", "st.c", run.lines.at("inlined_helper"), false);
  ASSERT_NO_FATAL_FAILURE(expect_source_frame(frames, "deep_leaf_alloc", "st.c",
                                              run.lines.at("deep_leaf_alloc"), false));
  EXPECT_EQ(frame_of(frames, "deep_leaf_alloc")->module, fixture_path("symbols_st_O0"));
}

TEST(SymbolizerTest, AnInlinedFunctionIsAFrameBeforeTheOneItIsIn) {
  const FixtureRun run = run_fixture("symbols_st_O2");
  const std::vector<SymbolFrame> frames = symbolise(run, "leaf");
  ASSERT_NO_FATAL_FAILURE(
      expect_source_frame(frames, "inlined_helper", "st.c", run.lines.at("inlined_helper"), true));
  ASSERT_NO_FATAL_FAILURE(expect_source_frame(frames, "deep_leaf_alloc", "st.c",
                                              run.lines.at("deep_leaf_alloc"), false));
  // Both come from one return address, the inlined one first.
  const SymbolFrame* helper = frame_of(frames, "inlined_helper");
  const SymbolFrame* leaf = frame_of(frames, "deep_leaf_alloc");
  EXPECT_EQ(helper + 1, leaf) << stack_dump(frames);
  EXPECT_EQ(helper->address, leaf->address);
}

TEST(SymbolizerTest, CxxNamesAreDemangled) {
  const FixtureRun run = run_fixture("symbols_st_cpp");
  const std::vector<SymbolFrame> frames = symbolise(run, "grow");
  expect_source_frame(frames, "memtap_fixture::Pool<int>::grow(int)", "st_cpp.cpp",
                      run.lines.at("grow"), false);
}

TEST(SymbolizerTest, ASharedLibraryLoadedWithDlopenIsSymbolisedAtItsLoadBias) {
  const FixtureRun run = run_fixture("symbols_st_O0", {kFixtureDir + "/libsymbols_st_plugin.so"});
  const std::vector<SymbolFrame> frames = symbolise(run, "plugin");
  ASSERT_NO_FATAL_FAILURE(expect_source_frame(frames, "plugin_alloc", "st_plugin.c",
                                              run.lines.at("plugin_alloc"), false));
  EXPECT_EQ(frame_of(frames, "plugin_alloc")->module, fixture_path("libsymbols_st_plugin.so"));
}

TEST(SymbolizerTest, ASeparateDebugFileIsFound) {
  const FixtureRun run = run_fixture("symbols_st_split");
  const std::vector<SymbolFrame> frames = symbolise(run, "leaf");
  expect_source_frame(frames, "deep_leaf_alloc", "st.c", run.lines.at("deep_leaf_alloc"), false);
}

TEST(SymbolizerTest, WithoutDebugInformationTheNearestSymbolInBacktraceSymbolsForm) {
  const FixtureRun run = run_fixture("symbols_st_nodebug");
  const std::vector<SymbolFrame> frames = symbolise(run, "leaf");
  const SymbolFrame* f = frame_of(frames, "deep_leaf_alloc");
  ASSERT_NE(f, nullptr) << stack_dump(frames);
  EXPECT_TRUE(f->file.empty());
  EXPECT_EQ(f->line, 0);
  const std::string exe = fixture_path("symbols_st_nodebug");
  EXPECT_EQ(f->module, exe);
  const std::string prefix = exe + "(deep_leaf_alloc+0x";
  EXPECT_EQ(f->text.substr(0, prefix.size()), prefix) << f->text;
  const std::string suffix = ") [" + hex(f->address) + "]";
  ASSERT_GT(f->text.size(), suffix.size());
  EXPECT_EQ(f->text.substr(f->text.size() - suffix.size()), suffix) << f->text;
}

TEST(SymbolizerTest, WithoutAnySymbolTheModuleAndOffset) {
  const FixtureRun run = run_fixture("symbols_st_stripped");
  const std::string exe = fixture_path("symbols_st_stripped");
  const LoadedModule& m = module_named(run, exe);
  const std::vector<SymbolFrame> frames = symbolise(run, "leaf");
  int in_exe = 0;
  for (const SymbolFrame& f : frames) {
    if (f.module != exe) continue;
    ++in_exe;
    EXPECT_TRUE(f.function.empty()) << f.text;
    EXPECT_EQ(f.offset, f.address - m.load_bias);
    EXPECT_EQ(f.text, exe + "(+" + hex(f.offset) + ") [" + hex(f.address) + "]");
  }
  EXPECT_GE(in_exe, 3) << stack_dump(frames);  // print_stack, the helper, the leaf, main
}

TEST(SymbolizerTest, ARebuiltBinaryWhoseBuildIdDiffersGetsNoNames) {
  // The process ran the -O0 build; at its path there is now another build (the -O2 one).
  FixtureRun run = run_fixture("symbols_st_O0");
  const std::string ran = fixture_path("symbols_st_O0");
  const std::string rebuilt = fixture_path("symbols_st_O2");
  for (LoadedModule& m : run.modules)
    if (m.path == ran) m.path = rebuilt;
  const std::vector<SymbolFrame> frames = symbolise(run, "leaf");
  int in_exe = 0;
  for (const SymbolFrame& f : frames) {
    if (f.module != rebuilt) continue;
    ++in_exe;
    EXPECT_TRUE(f.function.empty()) << f.text;
    EXPECT_EQ(f.text,
              rebuilt + "(+" + hex(f.offset) + ") [" + hex(f.address) + "] (build-id differs)");
  }
  EXPECT_GE(in_exe, 3) << stack_dump(frames);
}

TEST(SymbolizerTest, OutsideEveryModuleIsQuestionMarks) {
  const FixtureRun run = run_fixture("symbols_st_O0");
  Symbolizer s;
  for (const LoadedModule& m : run.modules) s.add_module(m);
  const std::vector<SymbolFrame>& frames = s.frames(0x10);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].text, "?? [0x10]");
  EXPECT_TRUE(frames[0].module.empty());
}

TEST(SymbolizerTest, AMissingFileFallsBackToTheModuleAndOffset) {
  Symbolizer s;
  s.add_module({"/nonexistent/libgone.so", 0x7f0000000000, 0x7f0000001000, 0x7f0000002000, ""});
  const std::vector<SymbolFrame>& frames = s.frames(0x7f0000001234);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].module, "/nonexistent/libgone.so");
  EXPECT_EQ(frames[0].text, "/nonexistent/libgone.so(+0x1234) [0x7f0000001234] (cannot read it)");
}

TEST(SymbolizerTest, TheModuleLoadedLastOverARangeWins) {
  Symbolizer s;
  s.add_module({"/nonexistent/old.so", 0x10000, 0x10000, 0x20000, ""});
  EXPECT_EQ(s.frames(0x10100).front().module, "/nonexistent/old.so");
  s.add_module({"/nonexistent/new.so", 0x18000, 0x18000, 0x28000, ""});
  EXPECT_EQ(s.frames(0x10100).front().module, "/nonexistent/old.so");
  EXPECT_EQ(s.frames(0x18100).front().module, "/nonexistent/new.so");
  EXPECT_EQ(s.frames(0x18100).front().offset, 0x100u);
}

TEST(SymbolizerTest, TheReturnAddressIsLookedUpOneBefore) {
  // A return address just past a module's end is the call at its last byte.
  Symbolizer s;
  s.add_module({"/nonexistent/a.so", 0x10000, 0x10000, 0x20000, ""});
  EXPECT_EQ(s.frames(0x20000).front().module, "/nonexistent/a.so");
  EXPECT_TRUE(s.frames(0x10000).front().module.empty());
}

TEST(SymbolizerTest, StackTextIsOneFrameALineInlinedFramesIncluded) {
  const FixtureRun run = run_fixture("symbols_st_O2");
  Symbolizer s;
  for (const LoadedModule& m : run.modules) s.add_module(m);
  const std::vector<uint64_t>& stack = run.stacks.at("leaf");
  std::string expected;
  for (const SymbolFrame& f : all_frames(s, stack))
    expected += (expected.empty() ? "" : "\n") + f.text;
  EXPECT_EQ(s.stack_text(stack.data(), stack.size()), expected);
  EXPECT_GT(all_frames(s, stack).size(), stack.size());  // the inlined frame is a line of its own
}

}  // namespace
}  // namespace memtap
