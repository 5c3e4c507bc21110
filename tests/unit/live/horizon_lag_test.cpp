// The live monitor's horizon learns from slow Hellos (monitor/live/horizon_lag.h).
#include "monitor/live/horizon_lag.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/clock.h"
#include "monitor/live/live_recording.h"
#include "tests/e2e/wire_forgery.h"
#include "tests/unit/live/live_dir.h"

namespace memtap {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

TEST(HorizonLag, IsTheConfiguredLagUntilAHelloTakesLonger) {
  HorizonLag lag(250 * kMs);
  EXPECT_EQ(lag.lag_ns(0), 250 * kMs);
  lag.saw_hello(100 * kMs, 1 * kS);  // twice that is still within the configured lag
  EXPECT_EQ(lag.lag_ns(1 * kS), 250 * kMs);
  lag.saw_hello(200 * kMs, 2 * kS);
  EXPECT_EQ(lag.lag_ns(2 * kS), 400 * kMs);
  lag.saw_hello(150 * kMs, 3 * kS);  // a quicker one changes nothing
  EXPECT_EQ(lag.lag_ns(3 * kS), 400 * kMs);
  lag.saw_hello(-5 * kS, 3 * kS);  // a start ahead of our clock teaches nothing
  EXPECT_EQ(lag.lag_ns(3 * kS), 400 * kMs);
  lag.saw_hello(10 * kS, 4 * kS);  // a start far behind (a skewed clock) holds rows 2 s at most
  EXPECT_EQ(lag.lag_ns(4 * kS), HorizonLag::kMaxNs);
}

TEST(HorizonLag, FallsBackOnceNoSlowHelloHasComeForAWhile) {
  HorizonLag lag(250 * kMs);
  lag.saw_hello(300 * kMs, 10 * kS);
  EXPECT_EQ(lag.lag_ns(10 * kS + HorizonLag::kMemoryNs - 1), 600 * kMs);
  EXPECT_EQ(lag.lag_ns(10 * kS + HorizonLag::kMemoryNs), 250 * kMs);
  // Forgotten, the next Hello is the slowest again, however quick.
  lag.saw_hello(140 * kMs, 10 * kS + HorizonLag::kMemoryNs);
  EXPECT_EQ(lag.lag_ns(10 * kS + HorizonLag::kMemoryNs), 280 * kMs);
}

// Takes everything that comes, until the socket is quiet for 200 ms.
void take_all(LiveRecording& rec) {
  while (rec.pump(200) > 0) {
  }
}

// Sends a Hello of a process that started at `started` (CLOCK_MONOTONIC), then its first
// Batch with one malloc 1 ms after that start.
void start_process(zmq::socket_t& socket, const e2e::ForgedHeader& header, uint64_t started,
                   uint64_t addr) {
  e2e::ForgedHeader h = header;
  const std::string hello = e2e::forged_hello(h, "node", started);
  socket.send(zmq::buffer(hello), zmq::send_flags::none);
  h.sequence = 1;
  const std::vector<e2e::ForgedEvent> one{{addr, 64}};
  const std::string batch =
      e2e::forged_batch_at(h, 1, one, started + uint64_t(kMs), 0, started + 2 * uint64_t(kMs));
  socket.send(zmq::buffer(batch), zmq::send_flags::none);
}

// Processes that start together on busy cores send their Hellos later and later. The first
// one's took 1.3 s to come, and that process then sends its rows of 1.2 s ago; the next
// one's Hello takes 1.5 s. With the default lag (250 ms) the first one's rows were written
// before the second had said it was there, and the second's first event, older, came late;
// with the lag learnt from the first slow Hello they wait for it.
TEST(HorizonLag, ALateHelloAfterASlowOneFindsTheRowsAfterItsStartStillHeld) {
  LiveDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string endpoint = dir.endpoint();
  std::string error;
  std::unique_ptr<LiveRecording> rec = dir.start(&error);
  ASSERT_NE(rec, nullptr) << error;
  zmq::context_t ctx;
  zmq::socket_t slow(ctx, zmq::socket_type::push), slower(ctx, zmq::socket_type::push);
  for (zmq::socket_t* s : {&slow, &slower}) s->connect(endpoint);
  const e2e::ForgedHeader slow_header{.pid = 7001, .instance_id = 1, .instance_secret = 11};
  const e2e::ForgedHeader slower_header{.pid = 7002, .instance_id = 2, .instance_secret = 22};
  const uint64_t now = monotonic_ns();
  start_process(slow, slow_header, now - 1300 * uint64_t(kMs), 0x10000);
  take_all(*rec);

  e2e::ForgedHeader h = slow_header;
  h.sequence = 2;
  const std::vector<e2e::ForgedEvent> one{{0x10040, 64}};
  const std::string recent =
      e2e::forged_batch_at(h, 1, one, now - 1200 * uint64_t(kMs), 0, now - 1199 * uint64_t(kMs));
  slow.send(zmq::buffer(recent), zmq::send_flags::none);
  take_all(*rec);
  start_process(slower, slower_header, now - 1500 * uint64_t(kMs), 0x20000);
  take_all(*rec);

  const std::vector<ProcessInfo> processes = rec->session().processes();
  for (uint32_t pid : {7001u, 7002u}) {
    const ProcessInfo* p = find_process(processes, pid);
    ASSERT_NE(p, nullptr) << pid;
    EXPECT_EQ(p->events_received, pid == 7001u ? 2u : 1u) << pid;
    EXPECT_EQ(p->late_events, 0u) << pid;
  }
}

}  // namespace
}  // namespace memtap
