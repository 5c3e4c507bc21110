// Programs the agent reaches differently: libraries loaded and unloaded while it runs, and
// programs it cannot enter at all (statically linked, setuid), which `memtap run` still
// runs unchanged and names the reason it recorded nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kStaticExitCode = MEMTAP_TEST_STATIC_EXIT_CODE;
const std::string kDlopenLoop = MEMTAP_TEST_DLOPEN_LOOP;
const std::string kAllocatingLib = MEMTAP_TEST_ALLOCATING_LIB;

class Loading : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  // `memtap run` of a program the agent cannot enter: its exit code and output as without
  // memtap, and the reason on stderr.
  void expect_unrecordable(const std::string& program, const std::string& reason) {
    const std::vector<std::string> argv = {program, "4", "two words"};
    ProcessResult plain = run_process(spec_in(dir, argv), kProcessTimeout);
    std::vector<std::string> cmd = {kMemtapBin, "run", "-o", dir.file("none.db"), "--"};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    ProcessResult traced = run_process(spec_in(dir, cmd), kProcessTimeout);
    ASSERT_TRUE(plain.exited && traced.exited) << describe(traced) << traced.err;
    EXPECT_EQ(traced.exit_code, 4) << traced.err;
    EXPECT_EQ(traced.out, plain.out);
    EXPECT_NE(traced.err.find("memtap run: no events from '" + program + "': " + reason),
              std::string::npos)
        << traced.err;
  }

  TempDir dir;
};

TEST_F(Loading, StaticallyLinkedProgramRunsAndIsSaidToBeOutOfReach) {
  expect_unrecordable(kStaticExitCode,
                      "it is statically linked, and the agent is loaded with "
                      "LD_PRELOAD, which only the dynamic loader reads");
}

// The loader ignores LD_PRELOAD when a program changes the user it runs as: a copy of a
// dynamically linked program, owned by nobody (65534) and setuid.
TEST_F(Loading, SetuidProgramRunsAndIsSaidToBeOutOfReach) {
  if (geteuid() != 0) GTEST_SKIP() << "making a file another user's needs root";
  struct statvfs fs;
  ASSERT_EQ(statvfs(dir.path().c_str(), &fs), 0);
  if (fs.f_flag & ST_NOSUID) GTEST_SKIP() << dir.path() << " is on a nosuid file system";
  const std::string copy = dir.file("setuid_exit_code");
  {
    std::ifstream in(kExitCode, std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(chown(copy.c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod(copy.c_str(), 04755), 0);
  // The directory too must let nobody in for exec to work.
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  expect_unrecordable(copy, "it is setuid (owned by ");
}

// A library that allocates in its constructor, in a function and in its destructor,
// loaded and unloaded 30 times, with C stacks on: every block is recorded, every free
// pairs, and the stacks name the library (the modules reach the monitor with the stacks).
TEST_F(Loading, LibraryLoadedAndUnloadedInALoop) {
  constexpr int kRounds = 30;
  const std::string db = dir.file("dlopen.db");
  ProcessResult r = run_process(
      spec_in(dir, {kMemtapBin, "run", "--stacks", "c", "--stack-min-size", "50000", "-o", db, "--",
                    kDlopenLoop, kAllocatingLib, std::to_string(kRounds)}),
      kProcessTimeout);
  ASSERT_TRUE(r.exited) << describe(r) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "rounds " + std::to_string(kRounds) + "\n");
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  auto count = [&](const std::string& where) {
    return q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC' AND " + where);
  };
  const std::string size = "CAST(json_extract(Attr, '$.size') AS INTEGER)";
  EXPECT_EQ(count(size + " = 50021"), 10 * kRounds);
  EXPECT_EQ(count(size + " = 50023"), kRounds);
  // Its frames name it by path, loaded again each round (and reported again after each
  // unload).
  EXPECT_EQ(
      count(size + " = 50021 AND \"Call Stack(C)\" LIKE '%" + real_path(kAllocatingLib) + "%'"),
      10 * kRounds);
  EXPECT_EQ(q->scalar_int("SELECT unmatched_frees FROM memtap_session"), 0);
  EXPECT_EQ(q->scalar_int("SELECT events_dropped FROM memtap_session"), 0);
}

}  // namespace
}  // namespace memtap::e2e
