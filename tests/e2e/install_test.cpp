// `cmake --install` keeps bin/memtap able to find its agent (lib/memtap/) and the agent
// its sender: the installed tree records a program as the build tree does.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"
#include "tests/e2e/recording_checks.h"

namespace memtap::e2e {
namespace {

// `memtap` (an installed or bundled one) records the allocation pattern and its fork()
// child, well formed.
void expect_records_the_allocation_pattern(const TempDir& dir, const std::string& memtap) {
  const std::string db = dir.file("pattern.db");
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  ProcessResult r =
      run_process(spec_in(dir, {memtap, "run", "-o", db, "--", kAllocPattern}), kProcessTimeout);
  window.end_ns = realtime_now_ns();
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  EXPECT_EQ(rec.sessions.size(), 2u) << "the program and its fork() child";
}

TEST(Install, InstalledMemtapFindsItsAgentAndRecords) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string prefix = dir.file("prefix");
  ProcessResult inst = install_build(dir, prefix);
  ASSERT_TRUE(inst.exited && inst.exit_code == 0) << describe(inst) << inst.err;

  expect_records_the_allocation_pattern(dir, prefix + "/bin/memtap");

  // What memtap.torch compiles on the user's machine is installed with the package.
  for (const char* file :
       {"memtap/_torch_pool_tracker.cpp", "memtap/_cuda_shim/crt/host_defines.h"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(prefix + "/lib/memtap/python/" + file)) << file;
  }
}

// scripts/gpu-bundle.sh packs the build for a GPU machine where memtap cannot be built:
// the bundled memtap records with the libraries it carries, found through its RUNPATH.
TEST(Install, TheGpuBundleRecordsWithTheLibrariesItCarries) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string bundle = dir.file("bundle");
  ProcessResult pack = run_process(
      spec_in(dir, {"/bin/bash", std::string(MEMTAP_SOURCE_DIR) + "/scripts/gpu-bundle.sh",
                    MEMTAP_BUILD_DIR, bundle}),
      kProcessTimeout);
  ASSERT_TRUE(pack.exited && pack.exit_code == 0) << describe(pack) << pack.out << pack.err;

  ProcessResult libs =
      run_process(spec_in(dir, {"/usr/bin/ldd", bundle + "/bin/memtap"}), kProcessTimeout);
  ASSERT_TRUE(libs.exited && libs.exit_code == 0) << describe(libs) << libs.err;
  for (const char* lib : {"libzmq.so.5 => ", "libsqlite3.so.0 => ", "libcapnp-"}) {
    const size_t at = libs.out.find(lib);
    ASSERT_NE(at, std::string::npos) << libs.out;
    const std::string line = libs.out.substr(at, libs.out.find('\n', at) - at);
    EXPECT_NE(line.find(bundle + "/bin/../lib/memtap/deps/"), std::string::npos) << line;
  }

  expect_records_the_allocation_pattern(dir, bundle + "/bin/memtap");
}

}  // namespace
}  // namespace memtap::e2e
