// The receiving loop paces itself after every message while the program runs on busy
// cores (common/cpu_share.h). A message carries up to 65,536 events, and pacing every 64
// messages never came in a two-thread allocation storm: 4 M events in ~60 messages, whose
// receiving thread then took 100 ms of the storm's 175.
#include <gtest/gtest.h>

#include <string>
#include <vector>
#include <zmq.hpp>

#include "monitor/live/live_recording.h"
#include "tests/e2e/wire_forgery.h"
#include "tests/unit/live/live_dir.h"

namespace memtap {
namespace {

using e2e::ForgedEvent;
using e2e::ForgedHeader;

bool busy() {
  return true;
}

TEST(ReceivingPace, AFewLargeMessagesAreEnoughToMakeTheReceivingThreadWait) {
  LiveDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  std::unique_ptr<LiveRecording> rec = dir.start(&error);
  ASSERT_NE(rec, nullptr) << error;
  rec->set_cores_busy_probe(busy);
  // A share so small that a thread doing any work outruns it, on a quiet machine or a
  // loaded one, once its 20 ms burst is spent.
  rec->pin_share(10);
  rec->set_program_running(true);

  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.connect(dir.endpoint());
  const ForgedHeader header{.pid = 4242, .instance_id = 7, .instance_secret = 9};
  const std::string hello = e2e::forged_hello(header, "another-host");
  push.send(zmq::buffer(hello), zmq::send_flags::none);
  ASSERT_EQ(rec->pump(5000), 1u);
  // Messages of 50,000 events, one at a time, until the receiving thread has waited: that
  // must come before the 64th, where the old rule paced first (63 such messages are at least
  // 60 ms of work on any machine, three times the burst).
  std::vector<ForgedEvent> events(50000);
  for (size_t i = 0; i < events.size(); ++i) {
    events[i] = {0x100000 + (i / 2) * 64, i % 2 != 0 ? uint64_t{0} : uint64_t{64}};  // pairs
  }
  int sent = 0;
  while (rec->receiving_waits() == 0 && sent < 63) {
    ForgedHeader h = header;
    h.sequence = uint64_t(++sent);
    const std::string batch = e2e::forged_batch(h, 1, events);
    push.send(zmq::buffer(batch), zmq::send_flags::none);
    ASSERT_EQ(rec->pump(5000), 1u) << "message " << sent << " sent but not received";
  }
  EXPECT_GT(rec->receiving_waits(), 0u) << sent << " messages";
  rec->set_program_running(false);
}

}  // namespace
}  // namespace memtap
