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

#include <algorithm>
#include <cstdint>
#include <future>
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
  uint64_t received_ns = 0;      // monotonic, when the test took it
  std::vector<uint64_t> clocks;  // its malloc records', in order
  std::vector<uint64_t> addrs;   // theirs
};

// The sender library, loaded as the agent loads it, draining `registry` into a PULL socket
// of the test's own.
class SenderUnderTest {
 public:
  explicit SenderUnderTest(BufferRegistry* registry) : registry_(registry) {}
  ~SenderUnderTest() {
    if (stop_) stop_(0, 0);
    if (pull_) zmq_close(pull_);
    if (ctx_) zmq_ctx_term(ctx_);
  }

  void start() {
    ctx_ = zmq_ctx_new();
    pull_ = zmq_socket(ctx_, ZMQ_PULL);
    ASSERT_EQ(zmq_bind(pull_, endpoint_.c_str()), 0) << zmq_strerror(errno);
    int timeout_ms = 10'000;
    zmq_setsockopt(pull_, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    void* lib = dlmopen(LM_ID_NEWLM, MEMTAP_TEST_SENDER_LIB, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    auto start = reinterpret_cast<memtap_sender_start_fn>(dlsym(lib, "memtap_sender_start"));
    stop_ = reinterpret_cast<memtap_sender_stop_fn>(dlsym(lib, "memtap_sender_stop"));
    ASSERT_TRUE(start && stop_);
    // The liveness checks look for the registry's threads in this process: a thread of the
    // test's that waits between its records is not taken for dead.
    registry_->pid = uint32_t(getpid());
    config_.abi_version = kSenderAbiVersion;
    config_.registry = registry_;
    config_.strings = &strings_;
    config_.endpoint = endpoint_.c_str();
    config_.pid = uint32_t(getpid());
    config_.instance_id = 42;
    config_.instance_secret = 43;
    config_.hostname = "test";
    config_.cmdline = "test";
    config_.cmdline_len = 5;
    config_.rank = config_.world_size = -1;
    config_.clock_monotonic_ns = monotonic_ns();
    config_.clock_realtime_ns = 1;
    config_.drain_interval_us = 2000;
    config_.flush_timeout_ms = 10'000;
    config_.connect_timeout_ms = 1000;
    config_.agent_version = "test";
    config_.untrace_thread = no_untrace;
    config_.refused = no_refusal;
    char error[256] = "";
    ASSERT_EQ(start(&config_, error, sizeof error), 0) << error;
  }

  // The next batch, its malloc records' clocks and its watermark.
  void next_batch(Batch* batch) {
    for (;;) {
      zmq_msg_t msg;
      zmq_msg_init(&msg);
      const int n = zmq_msg_recv(&msg, pull_, 0);
      const uint64_t received_ns = monotonic_ns();
      ASSERT_GE(n, 0) << zmq_strerror(errno);
      DecodeResult decoded = decode_message(zmq_msg_data(&msg), zmq_msg_size(&msg));
      zmq_msg_close(&msg);
      ASSERT_TRUE(decoded.ok) << decoded.error;
      if (decoded.message.body != WireBodyKind::kBatch) continue;
      *batch = Batch{};
      batch->watermark_ns = decoded.message.batch.watermark_ns;
      batch->received_ns = received_ns;
      for (const WireThreadEvents& t : decoded.message.batch.threads) {
        for (const WireEvent& e : t.events) {
          if (e.kind != EventKind::kMalloc) continue;
          batch->clocks.push_back(e.ts_ns);
          batch->addrs.push_back(e.addr);
        }
      }
      return;
    }
  }

 private:
  BufferRegistry* registry_;
  StringLog strings_;  // empty: no text is interned here
  std::string endpoint_ = "ipc:///tmp/memtap_sender_watermark_" + std::to_string(getpid()) + "_" +
                          std::to_string(monotonic_ns()) + ".sock";
  MemtapSenderConfig config_{};
  void* ctx_ = nullptr;
  void* pull_ = nullptr;
  memtap_sender_stop_fn stop_ = nullptr;
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

  SenderUnderTest sender(&registry);
  ASSERT_NO_FATAL_FAILURE(sender.start());
  std::vector<Batch> batches;
  uint64_t received = 0;
  while (received < kRecords) {
    Batch batch;
    ASSERT_NO_FATAL_FAILURE(sender.next_batch(&batch)) << "after " << received << " records";
    received += batch.clocks.size();
    if (!batch.clocks.empty()) batches.push_back(std::move(batch));
  }

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

// A hook reads the clock, then writes and publishes its record; a thread preempted in
// between publishes it after drains that began later than its clock reading. On a crowded
// machine that wait lasts milliseconds (one event of 2.2 M came late, 5.7 ms behind a
// watermark already sent). So every watermark stays 50 ms behind the moment its batch left.
// And here a thread that has recorded before reads the clock, the sender's batches go on for
// 20 ms (heartbeats carry the watermark forward), and only then does the thread publish its
// record: no watermark sent meanwhile is later than its clock.
TEST(SenderWatermark, ARecordPublishedMillisecondsAfterItsClockReadingIsNotLate) {
  constexpr uint64_t kMarginNs = 50'000'000;
  static BufferRegistry registry;
  SenderUnderTest sender(&registry);
  ASSERT_NO_FATAL_FAILURE(sender.start());
  std::promise<uint64_t> clock_read;
  std::promise<void> publish;
  uint64_t published_ns = 0;
  std::thread hook([&] {
    // Attached first: a thread's first record is stamped no earlier than its attach.
    record_event(&registry, false, EventKind::kMalloc, 0x20000, 48, monotonic_ns());
    const uint64_t clock = monotonic_ns();
    clock_read.set_value(clock);
    publish.get_future().wait();
    published_ns = monotonic_ns();
    record_event(&registry, false, EventKind::kMalloc, 0x10000, 48, clock);
  });
  const uint64_t clock = clock_read.get_future().get();
  uint64_t newest_watermark = 0;
  auto take = [&](const Batch& batch) {
    EXPECT_LE(batch.watermark_ns + kMarginNs, batch.received_ns)
        << "a watermark less than 50 ms behind its batch";
    newest_watermark = std::max(newest_watermark, batch.watermark_ns);
  };
  for (;;) {
    Batch batch;
    ASSERT_NO_FATAL_FAILURE(sender.next_batch(&batch));
    take(batch);
    if (batch.received_ns - clock >= 20'000'000) break;
  }
  publish.set_value();
  hook.join();
  for (;;) {
    Batch batch;
    ASSERT_NO_FATAL_FAILURE(sender.next_batch(&batch));
    const auto it = std::find(batch.addrs.begin(), batch.addrs.end(), 0x10000u);
    if (it == batch.addrs.end()) {
      take(batch);
      continue;
    }
    EXPECT_EQ(batch.clocks[size_t(it - batch.addrs.begin())], clock);
    break;
  }
  // Within the margin (a machine too busy to publish it in time says nothing here).
  if (published_ns - clock < kMarginNs) {
    EXPECT_LE(newest_watermark, clock)
        << "ns the record would be late by: " << newest_watermark - clock;
  }
}

}  // namespace
}  // namespace memtap
