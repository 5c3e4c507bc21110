// The room a recording keeps for its last words under a file size limit: the soft limit
// lowered while it is held, raised as it is given back, never above the user's; a child
// given the user's limit back; no limit where none was set. Each test in a forked child:
// the limit would hold for the whole test run.
#include "monitor/store/recording_reserve.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

using test::in_child;
using test::in_child_with_file_size_limit;
using test::TempDir;

constexpr uint64_t kLimit = 8 << 20;
constexpr uint64_t kReserve = 512 << 10;

// "" when the soft limit is `expected`, else what it is.
std::string soft_limit_is(rlim_t expected, const std::string& when) {
  rlimit now{};
  if (getrlimit(RLIMIT_FSIZE, &now) != 0) return "getrlimit failed " + when + "; ";
  if (now.rlim_cur == expected) return "";
  return "soft limit " + std::to_string(now.rlim_cur) + " " + when + ", not " +
         std::to_string(expected) + "; ";
}

// The soft limit a forked child of this process has once it has restored the user's.
rlim_t child_soft_limit() {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  const pid_t child = fork();
  if (child == 0) {
    restore_user_file_size_limit_in_child();
    rlimit now{};
    getrlimit(RLIMIT_FSIZE, &now);
    _exit(write(fds[1], &now.rlim_cur, sizeof now.rlim_cur) == sizeof now.rlim_cur ? 0 : 1);
  }
  close(fds[1]);
  rlim_t soft = 0;
  if (read(fds[0], &soft, sizeof soft) != sizeof soft) soft = 0;
  close(fds[0]);
  waitpid(child, nullptr, 0);
  return soft;
}

TEST(RecordingReserve, HoldsItsRoomBelowAFileSizeLimitAndGivesItBackInHalves) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(in_child([&]() -> std::string {
              const rlimit limit{kLimit, kLimit + 4096};
              if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return "setrlimit failed";
              std::string out;
              RecordingReserve reserve;
              reserve.create(dir.file("x.reserve"), kReserve);
              out += soft_limit_is(kLimit - kReserve, "while recording");
              if (user_file_size_limit() != kLimit) out += "user_file_size_limit; ";
              if (child_soft_limit() != kLimit) out += "a child was not given the limit back; ";
              reserve.release_half();
              out += soft_limit_is(kLimit - kReserve / 2, "after the stop");
              reserve.release();
              out += soft_limit_is(kLimit, "after finish()");
              rlimit now{};
              getrlimit(RLIMIT_FSIZE, &now);
              if (now.rlim_max != kLimit + 4096) out += "the hard limit changed; ";
              if (child_soft_limit() != kLimit) out += "a child's limit after finish(); ";
              return out;
            }),
            "");
}

TEST(RecordingReserve, TwoRecordingsAtOnceHoldRoomForBoth) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(
      in_child_with_file_size_limit(kLimit,
                                    [&]() -> std::string {
                                      std::string out;
                                      RecordingReserve first;
                                      RecordingReserve second;
                                      first.create(dir.file("a.reserve"), kReserve);
                                      second.create(dir.file("b.reserve"), kReserve);
                                      out += soft_limit_is(kLimit - 2 * kReserve, "with both");
                                      if (user_file_size_limit() != kLimit)
                                        out += "user_file_size_limit; ";
                                      first.release();
                                      out += soft_limit_is(kLimit - kReserve, "with the second");
                                      second.release();
                                      out += soft_limit_is(kLimit, "with neither");
                                      return out;
                                    }),
      "");
}

// No limit, or one too small to spare the room: nothing changes.
TEST(RecordingReserve, LeavesNoLimitAndASmallOneAsTheyAre) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(in_child([&]() -> std::string {
              std::string out;
              const rlimit none{RLIM_INFINITY, RLIM_INFINITY};
              if (setrlimit(RLIMIT_FSIZE, &none) != 0) return "setrlimit failed";
              {
                RecordingReserve reserve;
                reserve.create(dir.file("x.reserve"), kReserve);
                out += soft_limit_is(RLIM_INFINITY, "with no limit");
                if (user_file_size_limit() != UINT64_MAX) out += "user_file_size_limit; ";
              }
              const rlimit small{kReserve, kReserve};
              if (setrlimit(RLIMIT_FSIZE, &small) != 0) return "setrlimit failed";
              RecordingReserve reserve;
              reserve.create(dir.file("y.reserve"), kReserve);
              out += soft_limit_is(kReserve, "under a small limit");
              return out;
            }),
            "");
}

}  // namespace
}  // namespace memtap
