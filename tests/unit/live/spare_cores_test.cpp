// The live recording says how many cores the program and other work leave (CpuShare::
// spare_cores), which decides whether its writer leaves the CPU to the live view
// (writer_leaves_the_cpu): looked at while a local program runs, unknown after.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <zmq.hpp>

#include "common/cpu_share.h"
#include "monitor/live/live_recording.h"
#include "tests/e2e/wire_forgery.h"
#include "tests/unit/live/live_dir.h"

namespace memtap {
namespace {

TEST(SpareCores, ALocalProgramsLooksSayWhatTheCoresLeaveAndNothingOnceItEnds) {
  LiveDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  std::unique_ptr<LiveRecording> rec = dir.start(&error);
  ASSERT_NE(rec, nullptr) << error;
  const std::shared_ptr<const CpuShare> share = rec->cpu_share();
  EXPECT_EQ(share->spare_cores.load(), -1);

  // This test process plays the traced program: a local process that runs, whose threads
  // /proc shows.
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.connect(dir.endpoint());
  const e2e::ForgedHeader header{.pid = uint32_t(getpid()), .instance_id = 7, .instance_secret = 9};
  const std::string hello = e2e::forged_hello(header, host);
  push.send(zmq::buffer(hello), zmq::send_flags::none);
  ASSERT_EQ(rec->pump(5000), 1u);
  rec->set_program_running(true);

  // The looks come every 25 ms of pumping.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (share->spare_cores.load() < 0 && std::chrono::steady_clock::now() < deadline) {
    rec->pump(5);
  }
  const int spare = share->spare_cores.load();
  EXPECT_GE(spare, 0);
  EXPECT_LE(spare, usable_cpus());

  rec->set_program_running(false);
  rec->pump(5);
  EXPECT_EQ(share->spare_cores.load(), -1);
}

}  // namespace
}  // namespace memtap
