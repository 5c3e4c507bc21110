// The test harness's own promise: a process that outlives its deadline is described (so a
// failure tells slow from stuck) and killed with every descendant still holding its output,
// so that no orphan of a failed test keeps running beside the rest of the suite.
#include "tests/e2e/process_runner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/e2e/stuck_processes.h"

namespace memtap::e2e {
namespace {

// Gone, or a zombie that only waits for whoever adopted it to reap it.
bool has_ended(pid_t pid) {
  const char state = process_state(pid);
  return state == 0 || state == 'Z';
}

TEST(ProcessRunner, AProcessPastItsDeadlineIsDescribedAndKilledWithItsChildren) {
  ProcessSpec spec;
  // The shell starts a child that keeps the stdout pipe, says both pids, and waits.
  spec.argv = {"/bin/sh", "-c", "sleep 300 & echo \"$$ $!\"; wait"};
  std::string error;
  std::unique_ptr<Process> p = Process::start(spec, &error);
  ASSERT_TRUE(p) << error;
  ASSERT_TRUE(p->wait_for_output(
      [](const std::string& out, const std::string&) { return out.find('\n') != out.npos; },
      std::chrono::seconds(30)));
  int shell = 0, child = 0;
  ASSERT_EQ(sscanf(p->out().c_str(), "%d %d", &shell, &child), 2) << p->out();

  ProcessResult r = p->wait(std::chrono::milliseconds(100));
  ASSERT_TRUE(r.timed_out) << describe(r);
  const std::string text = describe(r);
  EXPECT_NE(text.find("process " + std::to_string(shell) + " (sh)"), std::string::npos) << text;
  EXPECT_NE(text.find("process " + std::to_string(child) + " (sleep)"), std::string::npos) << text;
  EXPECT_NE(text.find("state S"), std::string::npos) << text;
  EXPECT_TRUE(poll_until([&] { return has_ended(child); }, std::chrono::seconds(30)))
      << "the shell's child outlived the timeout";
}

}  // namespace
}  // namespace memtap::e2e
