// The sender's watermarks when its drains are cut short, against the real sender library
// (loaded with dlmopen, as the agent loads it) and a real ZeroMQ socket.
//
// A sender that cannot keep up (nice 19 beside busy cores) drains kMaxRecordsPerBatch
// records at a time and never finds its buffers empty. Its batches used to carry only the
// watermark of the last round that emptied them, so the monitor held every row back until
// the program ended and showed nothing live. Each batch now promises what it can: nothing
// older than the oldest record it left in the buffers.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zmq.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "agent/event_buffer_writer.h"
#include "agent/sender/sender_api.h"
#include "agent/string_log.h"
#include "common/clock.h"
#include "monitor/engine/decode.h"

namespace memtap {
namespace {

void no_untrace() {}
void no_refusal(const char*) {}

struct Batch {
  uint64_t watermark_ns = 0;
  std::vector<uint64_t> clocks;  // its events', in order
};

TEST(SenderWatermark, CutDrainsPromiseTheOldestRecordLeftBehind) {
  // Records 1 us apart, the newest 10 ms ago, all waiting before the sender starts: its first
  // round drains them a batch at a time, each cut at kMaxRecordsPerBatch (65536) but the last.
  constexpr uint64_t kRecords = 200'000;
  const uint64_t first_clock = monotonic_ns() - 10'000'000 - kRecords * 1000;
  static BufferRegistry registry;
  std::thread([&] {
    for (uint64_t i = 0; i < kRecords; ++i) {
      record_event(&registry, false, EventKind::kMalloc, 0x10000 + i * 64, 48,
                   first_clock + i * 1000);
    }
  }).join();

  const std::string endpoint =
      "ipc:///tmp/memtap_sender_watermark_" + std::to_string(getpid()) + ".sock";
  void* ctx = zmq_ctx_new();
  void* pull = zmq_socket(ctx, ZMQ_PULL);
  ASSERT_EQ(zmq_bind(pull, endpoint.c_str()), 0) << zmq_strerror(errno);
  int timeout_ms = 10'000;
  zmq_setsockopt(pull, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);

  void* lib = dlmopen(LM_ID_NEWLM, MEMTAP_TEST_SENDER_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto start = reinterpret_cast<memtap_sender_start_fn>(dlsym(lib, "memtap_sender_start"));
  auto stop = reinterpret_cast<memtap_sender_stop_fn>(dlsym(lib, "memtap_sender_stop"));
  ASSERT_TRUE(start && stop);
  MemtapSenderConfig config{};
  config.abi_version = kSenderAbiVersion;
  config.registry = &registry;
  static StringLog strings;  // empty: no text is interned here
  config.strings = &strings;
  config.endpoint = endpoint.c_str();
  config.pid = uint32_t(getpid());
  config.instance_id = 42;
  config.instance_secret = 43;
  config.hostname = "test";
  config.cmdline = "test";
  config.cmdline_len = 5;
  config.rank = config.world_size = -1;
  config.clock_monotonic_ns = monotonic_ns();
  config.clock_realtime_ns = 1;
  config.drain_interval_us = 2000;
  config.flush_timeout_ms = 10'000;
  config.connect_timeout_ms = 1000;
  config.agent_version = "test";
  config.untrace_thread = no_untrace;
  config.refused = no_refusal;
  char error[256] = "";
  ASSERT_EQ(start(&config, error, sizeof error), 0) << error;

  std::vector<Batch> batches;
  uint64_t received = 0;
  while (received < kRecords) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    const int n = zmq_msg_recv(&msg, pull, 0);
    ASSERT_GE(n, 0) << "after " << received << " records: " << zmq_strerror(errno);
    DecodeResult decoded = decode_message(zmq_msg_data(&msg), zmq_msg_size(&msg));
    zmq_msg_close(&msg);
    ASSERT_TRUE(decoded.ok) << decoded.error;
    if (decoded.message.body != WireBodyKind::kBatch) continue;
    Batch batch;
    batch.watermark_ns = decoded.message.batch.watermark_ns;
    for (const WireThreadEvents& t : decoded.message.batch.threads) {
      for (const WireEvent& e : t.events) {
        if (e.kind == EventKind::kMalloc) batch.clocks.push_back(e.ts_ns);
      }
    }
    received += batch.clocks.size();
    if (!batch.clocks.empty()) batches.push_back(std::move(batch));
  }
  stop(0, 0);
  zmq_close(pull);
  zmq_ctx_term(ctx);

  ASSERT_EQ(received, kRecords);
  ASSERT_GE(batches.size(), 3u) << "the drains were cut";
  for (size_t i = 0; i + 1 < batches.size(); ++i) {
    SCOPED_TRACE("batch " + std::to_string(i) + " of " + std::to_string(batches.size()));
    // True: nothing sent later is older than the promise.
    EXPECT_LE(batches[i].watermark_ns, batches[i + 1].clocks.front());
    // And useful: past this batch's own first record, so the monitor can release rows.
    EXPECT_GT(batches[i].watermark_ns, batches[i].clocks.front());
  }
}

}  // namespace
}  // namespace memtap
