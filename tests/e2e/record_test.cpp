// `memtap record`: one headless monitor that many processes stream into at once, whether
// preloaded by hand (LD_PRELOAD + MEMTAP_ENDPOINT) or started by `memtap run --connect`.
#include <gtest/gtest.h>

#include <set>
#include <zmq.hpp>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"
#include "tests/e2e/recording_checks.h"

namespace memtap::e2e {
namespace {

class MemtapRecord : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }
  TempDir dir;
};

TEST_F(MemtapRecord, RecordsManyProcessesAtOnce) {
  constexpr int kPrograms = 6;
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string db = dir.file("many.db");
  std::unique_ptr<Process> recorder = start_recorder(dir, endpoint, db);
  ASSERT_TRUE(recorder);

  WallWindow window;
  window.begin_ns = realtime_now_ns();
  std::vector<std::unique_ptr<Process>> programs;
  for (int i = 0; i < kPrograms; ++i) {
    std::string error;
    programs.push_back(Process::start(preloaded_spec(dir, {kAllocPattern}, endpoint), &error));
    ASSERT_TRUE(programs.back()) << error;
  }
  std::vector<PatternRun> runs;
  for (auto& p : programs) {
    PatternRun run;
    ASSERT_TRUE(finish_pattern_run(*p, &run));
    runs.push_back(run);
  }
  window.end_ns = realtime_now_ns();

  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited) << describe(stopped) << "\nstderr:\n" << stopped.err;
  EXPECT_EQ(stopped.exit_code, 0) << "stderr:\n" << stopped.err;
  EXPECT_FALSE(is_socket(dir.file("m.sock"))) << "the recorder removes its socket";

  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  std::set<int64_t> expected_pids;
  for (const PatternRun& run : runs) {
    expected_pids.insert(run.pid);
    expected_pids.insert(run.child_pid);
    expect_alloc_pattern(rec, run);
  }
  std::set<int64_t> recorded_pids;
  for (const auto& [pid, session] : rec.sessions) recorded_pids.insert(pid);
  EXPECT_EQ(recorded_pids, expected_pids) << "6 programs and their 6 children, nothing else";
  EXPECT_EQ(rec.meta["mode"], "record");
}

// Untrusted input: messages that are not memtap's are counted (memtap_meta
// rejected_messages), never crash the monitor, and do not disturb real processes.
TEST_F(MemtapRecord, MalformedMessagesAreCountedAndRecordingGoesOn) {
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string db = dir.file("malformed.db");
  std::unique_ptr<Process> recorder = start_recorder(dir, endpoint, db);
  ASSERT_TRUE(recorder);
  {
    zmq::context_t ctx;
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 5000);  // close waits until all three are delivered
    push.connect(endpoint);
    const std::string text = "not a memtap message";
    const std::string words(64, '\xff');   // whole words, nonsense segment table
    const std::string ragged(13, '\x01');  // not a whole number of words
    for (const std::string* m : {&text, &words, &ragged}) {
      push.send(zmq::buffer(*m), zmq::send_flags::none);
    }
  }
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  ProcessResult r = run_process(preloaded_spec(dir, {kAllocPattern}, endpoint), kProcessTimeout);
  window.end_ns = realtime_now_ns();
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  PatternRun run;
  std::string error;
  ASSERT_TRUE(parse_pattern_output(r.out, &run, &error)) << error;
  run.expected_ppid = getpid();
  run.command_line = kAllocPattern;

  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;
  EXPECT_NE(stopped.err.find("memtap: 3 messages rejected: 3 malformed\n"), std::string::npos)
      << "the summary shows the loss:\n"
      << stopped.err;
  RecordingData rec;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  expect_alloc_pattern(rec, run);
  EXPECT_EQ(rec.meta["rejected_messages"], "3");
  EXPECT_EQ(rec.meta["rejected_malformed"], "3");
}

TEST_F(MemtapRecord, MemtapRunConnectStreamsIntoARunningRecorder) {
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string db = dir.file("connect.db");
  std::unique_ptr<Process> recorder = start_recorder(dir, endpoint, db);
  ASSERT_TRUE(recorder);

  WallWindow window;
  window.begin_ns = realtime_now_ns();
  std::string error;
  ProcessSpec spec =
      spec_in(dir, {kMemtapBin, "run", "--connect", endpoint, "--", kAllocPattern, "5"});
  spec.cwd = dir.path();  // where a default output would land, had memtap run made one
  std::unique_ptr<Process> memtap = Process::start(spec, &error);
  ASSERT_TRUE(memtap) << error;
  const pid_t memtap_pid = memtap->pid();
  ProcessResult r = memtap->wait(kProcessTimeout);
  window.end_ns = realtime_now_ns();
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 5) << "stderr:\n" << r.err;

  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited) << describe(stopped) << "\nstderr:\n" << stopped.err;
  EXPECT_EQ(stopped.exit_code, 0) << "stderr:\n" << stopped.err;

  PatternRun run;
  ASSERT_TRUE(parse_pattern_output(r.out, &run, &error)) << error;
  run.expected_ppid = memtap_pid;
  run.command_line = kAllocPattern + " 5";
  RecordingData rec;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  expect_alloc_pattern(rec, run);
  EXPECT_EQ(rec.sessions.size(), 2u);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"connect.db"})
      << "memtap run --connect writes no database of its own";
}

}  // namespace
}  // namespace memtap::e2e
