// Many ranks on several hosts into one monitor, as a training job streams from its nodes:
// 16 programs, each with its fork() child (32 processes), on four "hosts" at once, over TCP
// with CURVE. A host is a loopback source address of its own (127.0.0.2 .. 127.0.0.5: the
// monitor sees four peers) and, where the kernel lets a test make a user and a UTS
// namespace, a host name of its own (the monitor then takes them for processes of other
// machines, whose deaths it cannot see: they must end by their Bye). Every process is
// recorded completely and attributed to itself: its rows, rank, host and peer address.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zmq.h>

#include <cstdio>
#include <set>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"
#include "tests/e2e/recording_checks.h"

namespace memtap::e2e {
namespace {

constexpr int kHosts = 4;
constexpr int kRanks = 16;

// Whether this kernel lets the test give a process a host name of its own.
bool can_name_hosts(const TempDir& dir) {
  ProcessSpec spec = spec_in(dir, {kExitCode, "0"});
  spec.hostname = "memtap-probe";
  std::string error;
  std::unique_ptr<Process> p = Process::start(spec, &error);
  if (!p) return false;
  ProcessResult r = p->wait(kProcessTimeout);
  return r.exited && r.exit_code == 0;
}

TEST(MultiHost, SixteenRanksOnFourHostsAreRecordedCompletelyOverCurve) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(zmq_has("curve")) << "libzmq without CURVE (libsodium)";
  const std::string keys = dir.file("keys");
  ProcessResult keygen = run_process(spec_in(dir, {kMemtapBin, "keygen", keys}), kProcessTimeout);
  ASSERT_TRUE(keygen.exited && keygen.exit_code == 0) << describe(keygen) << keygen.err;
  const bool named_hosts = can_name_hosts(dir);
  if (!named_hosts) {
    printf("note: no user namespaces here: the four hosts share this machine's name\n");
  }

  const std::string db = dir.file("ranks.db");
  std::string endpoint;
  // 32 processes starting at once on a busy machine: an agent may say Hello (after loading
  // its sender, at nice 19) later than the default 250 ms horizon after its first hook
  // call, and its first rows would then come out of time order (docs/design-notes.md,
  // monitor/engine "Ordering"). As on a busy node, the horizon is raised.
  std::unique_ptr<Process> recorder = start_tcp_recorder(
      dir, db, {"--keys", keys}, &endpoint, "tcp://127.0.0.1:*", {"MEMTAP_HORIZON_MS=10000"});
  ASSERT_TRUE(recorder);
  const std::string port = endpoint.substr(endpoint.rfind(':'));

  struct Rank {
    std::unique_ptr<Process> process;
    std::string source;    // the host's address
    std::string hostname;  // "" this machine's
  };
  std::vector<Rank> ranks(kRanks);
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  for (int i = 0; i < kRanks; ++i) {
    Rank& rank = ranks[size_t(i)];
    const int host = i % kHosts;
    rank.source = "127.0.0." + std::to_string(2 + host);
    // ZeroMQ's "source;destination" form: the connection leaves from the host's address.
    ProcessSpec spec =
        preloaded_spec(dir, {kAllocPattern}, "tcp://" + rank.source + ":0;127.0.0.1" + port);
    spec.env_set.push_back("MEMTAP_KEYS=" + keys);
    spec.env_set.push_back("RANK=" + std::to_string(i));
    spec.env_set.push_back("WORLD_SIZE=" + std::to_string(kRanks));
    if (named_hosts) rank.hostname = spec.hostname = "node-" + std::to_string(host);
    std::string error;
    rank.process = Process::start(spec, &error);
    ASSERT_TRUE(rank.process) << error;
  }
  std::vector<PatternRun> runs;
  for (Rank& rank : ranks) {
    PatternRun run;
    ASSERT_TRUE(finish_pattern_run(*rank.process, &run));
    run.hostname = rank.hostname;
    runs.push_back(run);
  }
  window.end_ns = realtime_now_ns();

  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;
  EXPECT_EQ(stopped.err.find("messages rejected"), std::string::npos) << stopped.err;

  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  EXPECT_EQ(rec.session_rows, 2 * kRanks) << "each process once";
  std::set<int64_t> expected_pids;
  std::set<std::string> peers;
  for (int i = 0; i < kRanks; ++i) {
    SCOPED_TRACE("rank " + std::to_string(i));
    const PatternRun& run = runs[size_t(i)];
    expect_alloc_pattern(rec, run);
    for (int64_t pid : {run.pid, run.child_pid}) {
      expected_pids.insert(pid);
      auto s = rec.sessions.find(pid);
      ASSERT_NE(s, rec.sessions.end());
      EXPECT_EQ(s->second.columns.at("rank").integer, i) << "pid " << pid;
      EXPECT_EQ(s->second.columns.at("world_size").integer, kRanks);
      EXPECT_EQ(s->second.columns.at("peer_address").text, ranks[size_t(i)].source)
          << "pid " << pid << " came from its host's address";
      peers.insert(s->second.columns.at("peer_address").text);
    }
  }
  std::set<int64_t> recorded_pids;
  for (const auto& [pid, session] : rec.sessions) recorded_pids.insert(pid);
  EXPECT_EQ(recorded_pids, expected_pids);
  EXPECT_EQ(peers.size(), size_t(kHosts));
}

}  // namespace
}  // namespace memtap::e2e
