// How a process ended, in the words memtap_session.ended_by and the report use.
#include "common/process_end.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace memtap {
namespace {

TEST(ProcessEnd, SaysTheExitStatusTheSignalByNameOrExec) {
  EXPECT_EQ(process_end_text(ProcessEnd::kExited, 0), "exit code 0");
  EXPECT_EQ(process_end_text(ProcessEnd::kExited, 7), "exit code 7");
  EXPECT_EQ(process_end_text(ProcessEnd::kSignalled, SIGSEGV), "signal SIGSEGV");
  EXPECT_EQ(process_end_text(ProcessEnd::kSignalled, SIGTERM), "signal SIGTERM");
  EXPECT_EQ(process_end_text(ProcessEnd::kSignalled, 200), "signal 200");
  EXPECT_EQ(process_end_text(ProcessEnd::kExeced, 0), "exec");
  EXPECT_EQ(process_end_text(ProcessEnd::kUnknown, 0), "");
}

}  // namespace
}  // namespace memtap
