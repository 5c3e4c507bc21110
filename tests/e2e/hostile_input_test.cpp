// A live monitor that untrusted senders write to: random bytes, truncated messages, lists
// that claim more than their message holds, another protocol version, messages of processes
// that never said Hello or already said Bye, a Hello storm, and a sender that claims a
// running process's pid and instance. Each is counted under its name (memtap_meta, the
// summary, report --json) and skipped, the monitor ends normally, and the good processes,
// started while it goes on, are recorded completely.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <random>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"
#include "tests/e2e/recording_checks.h"
#include "tests/e2e/wire_forgery.h"

namespace memtap::e2e {
namespace {

const std::string kStreamer = MEMTAP_TEST_STREAMER;

// Passes one agent's messages on to the monitor, in order, over a connection of its own,
// and learns from the agent's Hello which process it is: its pid and instance, as anyone
// who reads a recording of it can; not the secret only its agent has. Right behind the
// agent's first Batch it sends what `inject` makes of them, over the same connection, so
// that the monitor knows the process when those arrive.
class Relay {
 public:
  using Inject = std::function<std::vector<std::string>(uint32_t pid, uint64_t instance)>;

  Relay(const std::string& listen, const std::string& monitor)
      : in_(ctx_, zmq::socket_type::pull), out_(ctx_, zmq::socket_type::push) {
    in_.set(zmq::sockopt::rcvhwm, 0);
    out_.set(zmq::sockopt::sndhwm, 0);
    out_.set(zmq::sockopt::linger, 10000);
    in_.bind(listen);
    out_.connect(monitor);
  }
  ~Relay() {
    if (thread_.joinable()) thread_.join();
  }

  // The sockets were made on the test's thread; from here on only the relay's uses them.
  void start(Inject inject) {
    thread_ = std::thread([this, inject] { run(inject); });
  }

  // Whether the agent's first Batch (and what was injected behind it) went through.
  bool wait_injected() {
    return injected_.get_future().wait_for(kProcessTimeout) == std::future_status::ready;
  }
  // Waits until the agent's Bye went through, written to the monitor's socket as an agent
  // writes its own before its process ends (the context's end waits for that); false if the
  // Bye never came.
  bool finish() {
    thread_.join();
    in_.close();
    out_.close();
    ctx_.close();
    return saw_bye_;
  }
  uint32_t pid() const { return pid_; }

 private:
  void run(const Inject& inject) {
    const auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
    bool said_hello = false, injected = false;
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{in_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
      zmq::message_t message;
      if (!in_.recv(message, zmq::recv_flags::dontwait)) continue;
      const ReadHeader h = read_header(message.data(), message.size());
      out_.send(message, zmq::send_flags::none);
      if (h.body == 'h') {
        pid_ = h.pid;
        instance_ = h.instance_id;
        said_hello = true;
      }
      if (h.body == 'b' && said_hello && !injected) {
        for (const std::string& m : inject(pid_, instance_)) {
          out_.send(zmq::buffer(m), zmq::send_flags::none);
        }
        injected = true;
        injected_.set_value();
      }
      if (h.body == 'y') {
        saw_bye_ = true;
        return;
      }
    }
  }

  zmq::context_t ctx_;
  zmq::socket_t in_, out_;
  std::thread thread_;
  std::promise<void> injected_;
  uint32_t pid_ = 0;
  uint64_t instance_ = 0;
  bool saw_bye_ = false;
};

class HostileInput : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  // `memtap record --listen endpoint -o db ARGS` printing its progress every 20 ms, once
  // its socket exists.
  std::unique_ptr<Process> start_recorder(const std::string& endpoint, const std::string& db,
                                          const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {kMemtapBin, "record", "--listen", endpoint, "-o", db};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessSpec spec = spec_in(dir, argv);
    spec.env_set.push_back("MEMTAP_PROGRESS_MS=20");
    std::string error;
    std::unique_ptr<Process> recorder = Process::start(spec, &error);
    if (!recorder) {
      ADD_FAILURE() << error;
      return nullptr;
    }
    const std::string path = endpoint.substr(endpoint.find("://") + 3);
    if (!poll_until([&] { return is_socket(path); }, kProcessTimeout)) {
      ADD_FAILURE() << "memtap record never created its socket\n" << recorder->err();
      return nullptr;
    }
    return recorder;
  }

  // A streamer (memtap_test_streamer) under the agent, streaming to `endpoint`.
  std::unique_ptr<Process> start_streamer(const std::string& endpoint) {
    ProcessSpec spec = preloaded_spec(dir, {kStreamer}, endpoint);
    spec.pipe_stdin = true;
    std::string error;
    std::unique_ptr<Process> p = Process::start(spec, &error);
    EXPECT_TRUE(p) << error;
    return p;
  }

  // Tells the streamer `command` and waits for its answer, `ok <live bytes>`.
  static void tell(Process& streamer, const std::string& command, const std::string& answer) {
    const size_t before = streamer.out().size();
    ASSERT_TRUE(streamer.write_stdin(command + "\n"));
    ASSERT_TRUE(streamer.wait_for_output(
        [&](const std::string& out, const std::string&) {
          return out.find(answer + "\n", before) != std::string::npos;
        },
        kProcessTimeout))
        << "the streamer did not answer '" << command << "':\n"
        << streamer.out() << streamer.err();
  }

  TempDir dir;
};

// The refusal counts of the newest complete progress line: rejected, silent and pending
// Hellos; false before the first.
bool last_progress(const std::string& err, uint64_t* rejected, uint64_t* silent,
                   uint64_t* pending) {
  const size_t end = err.rfind('\n');
  if (end == std::string::npos) return false;
  const size_t at = err.rfind("memtap: progress ", end);
  if (at == std::string::npos) return false;
  const size_t fields = err.find(" rejected=", at);
  if (fields == std::string::npos || fields > end) return false;
  unsigned long long r = 0, s = 0, p = 0;
  if (std::sscanf(err.c_str() + fields, " rejected=%llu silent_hellos=%llu pending_hellos=%llu", &r,
                  &s, &p) != 3) {
    return false;
  }
  *rejected = r;
  *silent = s;
  *pending = p;
  return true;
}

constexpr uint64_t kGuessedSecret = 0x5eed;
constexpr uint64_t kSpoofSize = 777777;  // no good process allocates this
constexpr uint32_t kSpoofThread = 4242;
constexpr uint32_t kFakePid = 4194000;
constexpr uint32_t kStorm = 3000;

TEST_F(HostileInput, EachKindIsCountedAndSkippedWhileGoodProcessesRecordCompletely) {
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string db = dir.file("hostile.db");
  std::unique_ptr<Process> recorder = start_recorder(endpoint, db);
  ASSERT_TRUE(recorder);
  WallWindow window;
  window.begin_ns = realtime_now_ns();

  // The victim: a good process, relayed, whose pid and instance a sender claims right after
  // its first Batch: a Batch with a block of its own, a Bye, a Hello as if it reconnected.
  const std::string relay_endpoint = "ipc://" + dir.file("relay.sock");
  Relay relay(relay_endpoint, endpoint);
  relay.start([](uint32_t pid, uint64_t instance) {
    ForgedHeader h{pid, instance, kGuessedSecret, 1000};
    std::vector<std::string> claims;
    claims.push_back(forged_batch(h, kSpoofThread, {{0xdead0000, kSpoofSize}}));
    h.sequence = 1001;
    claims.push_back(forged_bye(h));
    h.sequence = 0;
    claims.push_back(forged_hello(h, host_name()));
    return claims;
  });
  std::unique_ptr<Process> victim = start_streamer(relay_endpoint);
  ASSERT_TRUE(victim);
  ASSERT_TRUE(relay.wait_injected()) << "the victim's first batch never came";

  // Good processes straight to the monitor, while the hostile sender goes on.
  std::vector<std::unique_ptr<Process>> good;
  for (int i = 0; i < 3; ++i) {
    std::string error;
    good.push_back(Process::start(preloaded_spec(dir, {kAllocPattern}, endpoint), &error));
    ASSERT_TRUE(good.back()) << error;
  }

  // The hostile sender, over a connection of its own.
  {
    zmq::context_t ctx;
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 10000);  // its context ends once everything is written
    push.set(zmq::sockopt::sndhwm, 0);
    push.connect(endpoint);
    auto send = [&](const std::string& m) { push.send(zmq::buffer(m), zmq::send_flags::none); };
    // Malformed: random bytes (5), a valid message truncated (2), lists that claim more than
    // the message holds, within the traversal limit and beyond it (2), a Hello larger than
    // any agent's (1).
    std::mt19937 random(7);  // fixed: a failure must reproduce
    for (size_t length : {1, 13, 64, 200, 4096}) {
      std::string bytes(length, '\0');
      for (char& c : bytes) c = char(random());
      send(bytes);
    }
    const ForgedHeader fake{kFakePid, 0xfa4e, 0x5ec4e7, 0};
    ForgedHeader first_batch = fake;
    first_batch.sequence = 1;
    const std::string whole = forged_batch(first_batch, 7, {{0x1000, 64}});
    send(whole.substr(0, whole.size() / 2 / 8 * 8));
    send(whole.substr(0, whole.size() - 3));
    send(batch_claiming_events(first_batch, 3000));
    send(batch_claiming_events(first_batch, 1u << 28));
    send(forged_hello(fake, std::string(300, 'h')));
    // Another protocol version (1).
    ForgedHeader old = fake;
    old.protocol_version = 7;
    send(forged_hello(old, "old-agent"));
    // A process that never said Hello (1).
    send(forged_batch({999999, 1, 1, 1}, 1, {{0x1000, 64}}));
    // A process of its own, recorded as what it says, then a message after its Bye (1).
    ForgedHeader own = fake;
    send(forged_hello(own, "hostile-host"));
    own.sequence = 1;
    send(forged_batch(own, 7, {{0x7000, 100}, {0x7000, 0}}));
    own.sequence = 2;
    send(forged_bye(own, 2));
    own.sequence = 3;
    send(forged_batch(own, 7, {{0x8000, 100}}));
    // A Hello storm: thousands of processes that never say more.
    for (uint32_t i = 0; i < kStorm; ++i) {
      send(forged_hello({5000000 + i, 0x570000 + i, i + 1, 0}, "storm-host"));
    }
  }

  tell(*victim, "alloc 64 12345", "ok 790080");
  tell(*victim, "free", "ok 0");
  victim->close_stdin();
  ProcessResult victim_result = victim->wait(kProcessTimeout);
  ASSERT_TRUE(victim_result.exited && victim_result.exit_code == 0)
      << describe(victim_result) << victim_result.err;
  ASSERT_TRUE(relay.finish()) << "the victim's Bye never came";
  std::vector<PatternRun> runs;
  for (auto& p : good) {
    PatternRun run;
    ASSERT_TRUE(finish_pattern_run(*p, &run));
    runs.push_back(run);
  }
  window.end_ns = realtime_now_ns();

  // Stopped once the monitor has taken everything the hostile sender sent (its progress
  // lines count it): what is still queued at a stop is read too, but not what is still on
  // its way.
  constexpr uint64_t kRejected = 10 + 1 + 1 + 1 + 3;
  uint64_t rejected = 0, silent = 0, pending = 0;
  ASSERT_TRUE(recorder->wait_for_output(
      [&](const std::string&, const std::string& err) {
        return last_progress(err, &rejected, &silent, &pending) && rejected == kRejected &&
               silent + pending == kStorm;
      },
      kProcessTimeout))
      << "the monitor never counted all of it:\n"
      << recorder->err().substr(recorder->err().size() > 4000 ? recorder->err().size() - 4000 : 0);
  // The storm kept no more than its connection's bound of Hellos waiting.
  EXPECT_LE(pending, 16u);
  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited) << describe(stopped) << stopped.err;
  EXPECT_EQ(stopped.exit_code, 0) << "the monitor ends normally";

  // The summary names each kind.
  EXPECT_NE(stopped.err.find("memtap: 16 messages rejected: 10 malformed, 1 of another protocol "
                             "version, 1 out of order, 1 of unknown processes, 3 spoofed"),
            std::string::npos)
      << stopped.err.substr(stopped.err.rfind("recording written"));
  EXPECT_NE(stopped.err.find("memtap: 3,000 hellos dropped: nothing followed them"),
            std::string::npos)
      << stopped.err.substr(stopped.err.rfind("recording written"));

  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  EXPECT_EQ(rec.meta["rejected_messages"], "16");
  EXPECT_EQ(rec.meta["rejected_malformed"], "10");
  EXPECT_EQ(rec.meta["rejected_protocol_version"], "1");
  EXPECT_EQ(rec.meta["rejected_out_of_order"], "1");
  EXPECT_EQ(rec.meta["rejected_unknown_process"], "1");
  EXPECT_EQ(rec.meta["rejected_spoofed"], "3");
  EXPECT_EQ(rec.meta["rejected_over_limit"], "0");
  EXPECT_EQ(rec.meta["silent_hellos"], "3000");

  // The good processes: complete, and only they, the victim and the sender's own process.
  expect_well_formed(rec, window);
  std::set<int64_t> expected_pids = {relay.pid(), kFakePid};
  for (const PatternRun& run : runs) {
    expect_alloc_pattern(rec, run);
    expected_pids.insert(run.pid);
    expected_pids.insert(run.child_pid);
  }
  std::set<int64_t> recorded_pids;
  for (const auto& [pid, session] : rec.sessions) recorded_pids.insert(pid);
  EXPECT_EQ(recorded_pids, expected_pids) << "no process of the storm is recorded";
  EXPECT_EQ(rec.sessions[kFakePid].hostname, "hostile-host");

  // The victim: its own blocks, none of the claimed ones, no gap, no reconnection.
  const int64_t victim_pid = relay.pid();
  ASSERT_EQ(victim_pid, victim->pid());
  int mallocs = 0, frees = 0;
  for (const DumpRecord* r : rec.rows_of(victim_pid)) {
    if (r->size == 12345 && r->event == "MALLOC") ++mallocs;
    if (r->size == 12345 && r->event == "FREE") ++frees;
    EXPECT_NE(r->size, kSpoofSize) << r->describe();
    EXPECT_NE(r->tid, kSpoofThread) << r->describe();
  }
  EXPECT_EQ(mallocs, 64);
  EXPECT_EQ(frees, 64);
  const SessionRecord& v = rec.sessions[victim_pid];
  EXPECT_EQ(v.columns.at("messages_lost").integer, 0);
  EXPECT_EQ(v.columns.at("reconnects").integer, 0);
  EXPECT_EQ(v.columns.at("ended_by").text, "exit code 0");

  // report --json says the same.
  ProcessResult report = run_process(spec_in(dir, {kMemtapBin, "report", "--json", db}));
  ASSERT_TRUE(report.exited && report.exit_code == 0) << describe(report) << report.err;
  EXPECT_NE(report.out.find("\"live_input\":{\"rejected_messages\":16,\"malformed\":10,"
                            "\"protocol_version\":1,\"out_of_order\":1,\"unknown_process\":1,"
                            "\"spoofed\":3,\"over_limit\":0,\"silent_hellos\":3000}"),
            std::string::npos)
      << report.out.substr(0, 600);
}

// A monitor takes at most --max-processes processes at once: the next one is refused and
// counted, the ones it records are complete.
TEST_F(HostileInput, ProcessesBeyondTheLimitAreRefusedAndCounted) {
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string db = dir.file("limit.db");
  std::unique_ptr<Process> recorder = start_recorder(endpoint, db, {"--max-processes", "1"});
  ASSERT_TRUE(recorder);
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  // Behind the recorded process's first Batch, over its connection (so in that order):
  // another process's Hello and Batch.
  const std::string relay_endpoint = "ipc://" + dir.file("relay.sock");
  Relay relay(relay_endpoint, endpoint);
  relay.start([](uint32_t, uint64_t) {
    const ForgedHeader other{kFakePid, 0x0be, 0x5ec, 0};
    ForgedHeader batch = other;
    batch.sequence = 1;
    return std::vector<std::string>{forged_hello(other, "other-host"),
                                    forged_batch(batch, 7, {{0x7000, 100}})};
  });
  std::unique_ptr<Process> streamer = start_streamer(relay_endpoint);
  ASSERT_TRUE(streamer);
  ASSERT_TRUE(relay.wait_injected());
  tell(*streamer, "alloc 8 12345", "ok 98760");
  streamer->close_stdin();
  ProcessResult r = streamer->wait(kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  ASSERT_TRUE(relay.finish());
  window.end_ns = realtime_now_ns();

  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;
  EXPECT_NE(stopped.err.find("memtap: 2 messages rejected: 1 of unknown processes, 1 over the "
                             "process limit (--max-processes)"),
            std::string::npos)
      << stopped.err;
  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  EXPECT_EQ(rec.meta["rejected_over_limit"], "1");
  EXPECT_EQ(rec.meta["rejected_unknown_process"], "1");
  ASSERT_EQ(rec.sessions.size(), 1u);
  EXPECT_EQ(rec.sessions.begin()->first, relay.pid());
  int mallocs = 0;
  for (const DumpRecord* row : rec.rows_of(relay.pid()))
    if (row->size == 12345 && row->event == "MALLOC") ++mallocs;
  EXPECT_EQ(mallocs, 8);
}

// `memtap run` takes the same limit, with the same default and message: a program whose
// fork() child would be one process too many has that process refused and counted (which of
// the two is the one whose first Batch came second).
TEST_F(HostileInput, RunTakesTheSameProcessLimit) {
  const std::string db = dir.file("run_limit.db");
  ProcessResult r = run_process(
      spec_in(dir, {kMemtapBin, "run", "--max-processes", "1", "-o", db, "--", kAllocPattern}),
      kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE(r.err.find("1 over the process limit (--max-processes)"), std::string::npos) << r.err;
  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  EXPECT_EQ(rec.meta["rejected_over_limit"], "1");
  EXPECT_EQ(rec.sessions.size(), 1u);

  for (const char* command : {"run", "record"}) {
    std::vector<std::string> argv = {kMemtapBin, command, "--max-processes",
                                     "-1",       "-o",    dir.file("bad.db")};
    if (std::string(command) == "run") argv.insert(argv.end(), {"--", kAllocPattern});
    ProcessResult bad = run_process(spec_in(dir, argv), kProcessTimeout);
    ASSERT_TRUE(bad.exited) << describe(bad);
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find(std::string("memtap ") + command +
                           ": --max-processes: expected a number from 1, got '-1'"),
              std::string::npos)
        << bad.err;
  }
}

}  // namespace
}  // namespace memtap::e2e
