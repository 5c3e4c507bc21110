// The live monitor takes its messages in the order they arrived, not ZeroMQ's turns between
// connections (monitor/live/arrival_queue.h): behind the live rate, a process whose batches
// each cover little of its time fell more than the stall limit behind one whose batches
// cover much, and its rows came late.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/clock.h"
#include "monitor/live/live_recording.h"
#include "tests/e2e/wire_forgery.h"
#include "tests/unit/live/live_dir.h"

namespace memtap {
namespace {

using e2e::ForgedEvent;
using e2e::ForgedHeader;

// Reads ahead (and ingests nothing) until `count` messages wait in the monitor.
void read_ahead_until(LiveRecording& rec, size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (rec.waiting_messages() < count && std::chrono::steady_clock::now() < deadline) {
    rec.pump(0, 0);
  }
  ASSERT_EQ(rec.waiting_messages(), count);
}

// Two ranks send the same 6 s of their time: `small` in 600 batches of 10 ms, `large` in 12
// of 500 ms, each batch when its time has passed, as agents do. The monitor only reads
// ahead while they send (busy elsewhere), then takes it all. In ZeroMQ's turns the large
// rank got 1 s ahead after three turns, the stall limit here: the small one was stalled
// and the rest of its events came late.
TEST(ReceivingOrder, ARankOfSmallBatchesKeepsLevelWithARankOfLargeOnesWhenTheMonitorIsBehind) {
  LiveDir dir;
  ASSERT_TRUE(dir.ok());
  SessionLimits limits;
  limits.stall_timeout_ns = 1'000'000'000;
  std::string error;
  std::unique_ptr<LiveRecording> rec = dir.start(&error, limits);
  ASSERT_NE(rec, nullptr) << error;

  zmq::context_t ctx;
  zmq::socket_t small(ctx, zmq::socket_type::push), large(ctx, zmq::socket_type::push);
  small.connect(dir.endpoint());
  large.connect(dir.endpoint());
  const ForgedHeader small_header{.pid = 5001, .instance_id = 1, .instance_secret = 11};
  const ForgedHeader large_header{.pid = 5002, .instance_id = 2, .instance_secret = 22};
  constexpr uint64_t kMs = 1'000'000;
  const uint64_t base = monotonic_ns() - 20'000 * kMs;  // behind the horizon
  // Each Hello with its first Batch right behind it, as an agent sends them: nothing yet.
  // Both processes are known before their events come (here the times are 20 s old, so
  // nothing else would hold the one's rows back for the other).
  for (auto [socket, header] : {std::pair{&small, small_header}, std::pair{&large, large_header}}) {
    const std::string hello = e2e::forged_hello(header, "node");
    socket->send(zmq::buffer(hello), zmq::send_flags::none);
    ForgedHeader first = header;
    first.sequence = 1;
    const std::string batch = e2e::forged_batch_at(first, 1, {}, base, 0, base);
    socket->send(zmq::buffer(batch), zmq::send_flags::none);
  }
  read_ahead_until(*rec, 4);

  uint64_t small_sequence = 1, large_sequence = 1;
  for (uint64_t t = 10; t <= 6000; t += 10) {
    ForgedHeader h = small_header;
    h.sequence = ++small_sequence;
    const std::vector<ForgedEvent> one{{0x10000 + t * 64, 64}};
    const std::string batch =
        e2e::forged_batch_at(h, 1, one, base + (t - 10) * kMs, 0, base + t * kMs);
    small.send(zmq::buffer(batch), zmq::send_flags::none);
    if (t % 500 == 0) {
      ForgedHeader lh = large_header;
      lh.sequence = ++large_sequence;
      std::vector<ForgedEvent> fifty(50);
      for (size_t i = 0; i < fifty.size(); ++i) fifty[i] = {0x900000 + (t * 50 + i) * 64, 64};
      const std::string big =
          e2e::forged_batch_at(lh, 1, fifty, base + (t - 500) * kMs, 10 * kMs, base + t * kMs);
      large.send(zmq::buffer(big), zmq::send_flags::none);
    }
    // The monitor reads ahead what has arrived before the next send, and takes none of it.
    read_ahead_until(*rec, 2 + small_sequence + large_sequence);
  }
  // The engine's turn: everything, then until the socket is quiet.
  while (rec->pump(200) > 0) {
  }
  const std::vector<ProcessInfo> processes = rec->session().processes();
  const ProcessInfo* s = find_process(processes, 5001);
  const ProcessInfo* l = find_process(processes, 5002);
  ASSERT_NE(s, nullptr);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(s->events_received, 600u);
  EXPECT_EQ(l->events_received, 600u);
  EXPECT_EQ(s->stalls, 0u);
  EXPECT_EQ(s->late_events, 0u);
  EXPECT_EQ(l->stalls, 0u);
  EXPECT_EQ(l->late_events, 0u);
}

// A process whose Hello arrives while the monitor is behind, with older batches of another
// waiting: its Hello is taken first. Until it is in, nothing holds the release back for its
// process but the horizon, a quarter of a second behind the wall clock; taken in its place,
// after the other's batch of a second ago, that batch's rows went out first, and the new
// process's own first rows, 10 ms older, came late (and its START_TRACE out of order).
TEST(ReceivingOrder, AHelloThatArrivesWhileTheMonitorIsBehindIsTakenBeforeOlderBatches) {
  LiveDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  std::unique_ptr<LiveRecording> rec = dir.start(&error);
  ASSERT_NE(rec, nullptr) << error;

  zmq::context_t ctx;
  zmq::socket_t running(ctx, zmq::socket_type::push), starting(ctx, zmq::socket_type::push);
  running.connect(dir.endpoint());
  const ForgedHeader running_header{.pid = 6001, .instance_id = 1, .instance_secret = 11};
  const ForgedHeader starting_header{.pid = 6002, .instance_id = 2, .instance_secret = 22};
  constexpr uint64_t kMs = 1'000'000;
  const uint64_t now = monotonic_ns();
  // The running process is known, and the monitor has taken everything so far.
  ForgedHeader h = running_header;
  const std::string hello = e2e::forged_hello(h, "node");
  running.send(zmq::buffer(hello), zmq::send_flags::none);
  h.sequence = 1;
  const std::string first =
      e2e::forged_batch_at(h, 1, {}, now - 20'000 * kMs, 0, now - 20'000 * kMs);
  running.send(zmq::buffer(first), zmq::send_flags::none);
  read_ahead_until(*rec, 2);
  while (rec->waiting_messages() > 0) rec->pump(0, 1);
  // Behind from here: a batch of a second ago waits in the monitor, then the new process's
  // Hello (it started 10 ms before that batch's event) and its first batch arrive.
  h.sequence = 2;
  const std::vector<ForgedEvent> one{{0x10000, 64}};
  const std::string older = e2e::forged_batch_at(h, 1, one, now - 1000 * kMs, 0, now - 999 * kMs);
  running.send(zmq::buffer(older), zmq::send_flags::none);
  read_ahead_until(*rec, 1);
  starting.connect(dir.endpoint());
  const uint64_t started = now - 1010 * kMs;
  ForgedHeader sh = starting_header;
  const std::string starting_hello = e2e::forged_hello(sh, "node", started);
  starting.send(zmq::buffer(starting_hello), zmq::send_flags::none);
  sh.sequence = 1;
  const std::vector<ForgedEvent> own{{0x20000, 128}};
  const std::string own_batch =
      e2e::forged_batch_at(sh, 1, own, started + kMs, 0, started + 2 * kMs);
  starting.send(zmq::buffer(own_batch), zmq::send_flags::none);
  read_ahead_until(*rec, 3);

  while (rec->pump(200) > 0) {
  }
  const std::vector<ProcessInfo> processes = rec->session().processes();
  const ProcessInfo* r = find_process(processes, 6001);
  const ProcessInfo* s = find_process(processes, 6002);
  ASSERT_NE(r, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(r->events_received, 1u);
  EXPECT_EQ(s->events_received, 1u);
  EXPECT_EQ(r->late_events, 0u);
  EXPECT_EQ(s->late_events, 0u) << "the new process's first event came after newer rows";
}

}  // namespace
}  // namespace memtap
