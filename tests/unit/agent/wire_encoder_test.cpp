// The sender's batch encoder on its own (agent/sender/wire_encoder.cpp): a batch decodes to
// the records and texts it was given, whether records are copied whole (EventRecord lies
// like wire::Event) or set field by field, a reused buffer carries nothing from one
// batch into the next, and a batch lent to ZeroMQ stays as it was until ZeroMQ frees it.
#include "agent/sender/wire_encoder.h"

#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/wire.capnp.h"
#include "monitor/engine/decode.h"

namespace memtap {
namespace {

EventRecord record(uint64_t ts_ns, EventKind kind, uint64_t addr, uint64_t size_bytes,
                   uint32_t string_id = 0, uint16_t device = 0) {
  EventRecord r{};
  r.ts_ns = ts_ns;
  r.kind = uint16_t(kind);
  r.device = device;
  r.addr = addr;
  r.size_bytes = size_bytes;
  r.string_id = string_id;
  return r;
}

// Two threads, every kind, extreme values; device events on distinct devices.
DrainResult two_threads() {
  DrainResult d;
  for (uint32_t k = 0; k <= uint32_t(EventKind::kPoolPeaks); ++k) {
    const uint16_t device = is_device_kind(EventKind(k)) ? uint16_t(k * 3) : 0;
    d.records.push_back(record(1000 + k, EventKind(k), 0x7f0000001000 + 16 * k, 24 + k, k, device));
  }
  d.records.push_back(record(2000, EventKind::kDeviceMalloc, 1, 2, 3, UINT16_MAX));
  d.threads.push_back({4242, 0, d.records.size()});
  size_t first = d.records.size();
  d.records.push_back(record(UINT64_MAX, EventKind::kMalloc, UINT64_MAX, UINT64_MAX, UINT32_MAX));
  d.records.push_back(record(0, EventKind::kFree, 0, 0));
  d.threads.push_back({7, first, 2});
  return d;
}

struct Decoded {
  std::vector<uint32_t> tids;
  std::vector<std::vector<EventRecord>> events;
  std::vector<std::pair<uint32_t, std::string>> strings;
  uint64_t dropped_so_far = 0, watermark_ns = 0, sequence = 0, sent_before = 0;
};

Decoded decode(std::string_view bytes) {
  // The view is not word-aligned in general; copy as a receiver would get it.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  EXPECT_EQ(bytes.size() % sizeof(capnp::word), 0u);
  memcpy(words.begin(), bytes.data(), words.size() * sizeof(capnp::word));
  capnp::FlatArrayMessageReader reader(words);
  auto m = reader.getRoot<wire::Message>();
  Decoded out;
  out.sequence = m.getSequence();
  EXPECT_TRUE(m.getBody().isBatch());
  auto b = m.getBody().getBatch();
  out.dropped_so_far = b.getDroppedSoFar();
  out.watermark_ns = b.getWatermarkNs();
  out.sent_before = b.getSentBefore();
  for (auto s : b.getStrings()) out.strings.emplace_back(s.getId(), std::string(s.getText()));
  for (auto t : b.getThreads()) {
    out.tids.push_back(t.getThreadId());
    out.events.emplace_back();
    for (auto e : t.getEvents()) {
      out.events.back().push_back(record(e.getTsNs(), EventKind(uint32_t(e.getKind())), e.getAddr(),
                                         e.getSizeBytes(), e.getStringId(), e.getDevice()));
    }
  }
  return out;
}

void expect_same_records(const std::vector<EventRecord>& got, const EventRecord* want,
                         size_t count) {
  ASSERT_EQ(got.size(), count);
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(got[i].ts_ns, want[i].ts_ns) << i;
    EXPECT_EQ(got[i].kind, want[i].kind) << i;
    EXPECT_EQ(got[i].addr, want[i].addr) << i;
    EXPECT_EQ(got[i].size_bytes, want[i].size_bytes) << i;
    EXPECT_EQ(got[i].string_id, want[i].string_id) << i;
    EXPECT_EQ(got[i].device, want[i].device) << i;
  }
}

TEST(BatchEncoder, RecordsLieLikeTheSchemasEventSoTheyAreCopiedWhole) {
  EXPECT_TRUE(BatchEncoder().copies_records());
}

TEST(BatchEncoder, ABatchDecodesToItsRecordsAndTextsCopiedOrSetFieldByField) {
  DrainResult d = two_threads();
  const char* text = "owner@inner";
  std::vector<StringText> strings = {{3, text, uint32_t(strlen(text))}, {9, "", 0}};
  std::string bytes[2];
  for (bool copy : {true, false}) {
    BatchEncoder enc;
    enc.set_copy_records(copy);
    ASSERT_EQ(enc.copies_records(), copy);
    std::string_view view = enc.encode({77, 5, 12}, d, strings, 31, 999, 123456);
    bytes[copy] = std::string(view);
    Decoded got = decode(view);
    EXPECT_EQ(got.sequence, 12u);
    EXPECT_EQ(got.dropped_so_far, 31u);
    EXPECT_EQ(got.watermark_ns, 999u);
    EXPECT_EQ(got.sent_before, 123456u);
    ASSERT_EQ(got.strings.size(), 2u);
    EXPECT_EQ(got.strings[0], std::make_pair(3u, std::string("owner@inner")));
    EXPECT_EQ(got.strings[1], std::make_pair(9u, std::string()));
    ASSERT_EQ(got.tids, (std::vector<uint32_t>{4242, 7}));
    for (size_t t = 0; t < 2; ++t) {
      expect_same_records(got.events[t], d.records.data() + d.threads[t].first, d.threads[t].count);
    }
  }
  // The same message either way, byte for byte.
  EXPECT_EQ(bytes[0], bytes[1]);
}

// Batch.modules, through the monitor's decoder: paths, ranges and build-ids as the scan found
// them (a build-id is bytes, NUL included), and none in a batch that has none.
TEST(BatchEncoder, ModulesDecodeToTheirPathsRangesAndBuildIds) {
  std::vector<ScannedModule> modules = {
      {"/usr/bin/st", 0x555500000000, 0x555500000000, 0x555500004000,
       std::string("\x8f\x00\x12\xff", 4)},
      {"[vdso]", 0x7ffd12340000, 0x7ffd12340000, 0x7ffd12342000, ""},
      {"/opt/lib/libfoo.so", 0, 0x7f0000001000, 0x7f0000200000, std::string(20, 'b')}};
  BatchEncoder enc;
  DrainResult d;  // what the monitor's decoder takes: times below 2^63
  d.records.push_back(record(1000, EventKind::kMalloc, 0x1000, 64));
  d.threads.push_back({7, 0, 1});
  std::string_view view = enc.encode({77, 5, 12}, d, {}, 0, 999, 0, modules);
  DecodeResult got = decode_message(view.data(), view.size());
  ASSERT_TRUE(got.ok) << got.error;
  const std::vector<LoadedModule>& decoded = got.message.batch.modules;
  ASSERT_EQ(decoded.size(), modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    EXPECT_EQ(decoded[i].path, modules[i].path) << i;
    EXPECT_EQ(decoded[i].load_bias, modules[i].load_bias) << i;
    EXPECT_EQ(decoded[i].start, modules[i].start) << i;
    EXPECT_EQ(decoded[i].end, modules[i].end) << i;
    EXPECT_EQ(decoded[i].build_id, modules[i].build_id) << i;
  }
  ASSERT_EQ(got.message.batch.threads.size(), 1u) << "the events still there";
  EXPECT_EQ(got.message.batch.threads[0].events.size(), 1u);
  std::string_view none = enc.encode({77, 5, 13}, d, {}, 0, 999);
  got = decode_message(none.data(), none.size());
  ASSERT_TRUE(got.ok) << got.error;
  EXPECT_TRUE(got.message.batch.modules.empty());
}

TEST(BatchEncoder, AReusedBufferCarriesNothingIntoTheNextBatch) {
  BatchEncoder enc;
  DrainResult big = two_threads();
  const char kText[] = "a long text that the next batch must not show";
  std::vector<StringText> strings = {{1, kText, sizeof kText - 1}};
  enc.encode({1, 1, 1}, big, strings, 5, 10);
  DrainResult small;
  small.records.push_back(record(50, EventKind::kMmap, 0x1000, 4096));
  small.threads.push_back({11, 0, 1});
  Decoded got = decode(enc.encode({1, 1, 2}, small, {}, 0, 20));
  EXPECT_TRUE(got.strings.empty());
  EXPECT_EQ(got.dropped_so_far, 0u);
  ASSERT_EQ(got.tids, (std::vector<uint32_t>{11}));
  expect_same_records(got.events[0], small.records.data(), 1);
  // An empty batch after both: no threads, no texts.
  Decoded empty = decode(enc.encode({1, 1, 3}, DrainResult{}, {}, 0, 30));
  EXPECT_TRUE(empty.tids.empty());
  EXPECT_TRUE(empty.strings.empty());
  EXPECT_EQ(empty.watermark_ns, 30u);
}

// ZeroMQ sends a batch from the encoder's memory (lend): until it frees the message, no
// later batch may be written there, and once freed the buffer is used again.
TEST(BatchEncoder, ALentBatchIsNotOverwrittenUntilZeroMQFreesIt) {
  BatchEncoder enc;
  DrainResult big = two_threads();
  std::string_view first = enc.encode({1, 1, 1}, big, {}, 0, 10);
  const std::string first_bytes(first);
  const std::string hello = "bytes of a Hello, not the encoder's";
  EXPECT_EQ(enc.lend(hello), nullptr) << "only the encoder's last batch is lent";
  void* lent = enc.lend(first);
  ASSERT_NE(lent, nullptr);
  DrainResult small;
  small.records.push_back(record(50, EventKind::kMmap, 0x1000, 4096));
  small.threads.push_back({11, 0, 1});
  // Two more batches while the first is held: neither touches its bytes.
  std::string_view second = enc.encode({1, 1, 2}, small, {}, 0, 20);
  EXPECT_NE(second.data(), first.data());
  void* lent2 = enc.lend(second);
  std::string_view third = enc.encode({1, 1, 3}, small, {}, 0, 30);
  EXPECT_NE(third.data(), first.data());
  EXPECT_NE(third.data(), second.data());
  EXPECT_EQ(std::string(first), first_bytes);
  Decoded held = decode(first);
  ASSERT_EQ(held.tids, (std::vector<uint32_t>{4242, 7}));
  EXPECT_EQ(enc.buffers(), 3u);
  // ZeroMQ frees the first and the second: the next batch goes where the first was.
  BatchEncoder::release_lent(const_cast<char*>(first.data()), lent);
  BatchEncoder::release_lent(const_cast<char*>(second.data()), lent2);
  std::string_view fourth = enc.encode({1, 1, 4}, small, {}, 0, 40);
  EXPECT_EQ(fourth.data(), first.data());
  Decoded got = decode(fourth);
  EXPECT_EQ(got.sequence, 4u);
  ASSERT_EQ(got.tids, (std::vector<uint32_t>{11}));
  expect_same_records(got.events[0], small.records.data(), 1);
}

// At most kMaxBuffers batches at once: with all of them lent, there is no room until ZeroMQ
// gives one back, and a wait for room ends when it does (here from another thread, as
// ZeroMQ's I/O thread would).
TEST(BatchEncoder, NoMoreThanEightBatchesAreLentAtOnce) {
  BatchEncoder enc;
  DrainResult small;
  small.records.push_back(record(50, EventKind::kMmap, 0x1000, 4096));
  small.threads.push_back({11, 0, 1});
  std::vector<std::pair<const char*, void*>> lent;
  for (size_t i = 0; i < BatchEncoder::kMaxBuffers; ++i) {
    ASSERT_TRUE(enc.wait_for_room(0)) << "batch " << i;
    std::string_view bytes = enc.encode({1, 1, i}, small, {}, 0, i);
    lent.push_back({bytes.data(), enc.lend(bytes)});
  }
  EXPECT_EQ(enc.buffers(), BatchEncoder::kMaxBuffers);
  EXPECT_FALSE(enc.wait_for_room(0));
  EXPECT_FALSE(enc.wait_for_room(20)) << "nothing was given back";
  std::thread zmq_io(
      [&] { BatchEncoder::release_lent(const_cast<char*>(lent[3].first), lent[3].second); });
  EXPECT_TRUE(enc.wait_for_room(60000));
  zmq_io.join();
  std::string_view next = enc.encode({1, 1, 99}, small, {}, 0, 99);
  EXPECT_EQ(next.data(), lent[3].first) << "the buffer given back is used again";
  EXPECT_EQ(enc.buffers(), BatchEncoder::kMaxBuffers);
  for (size_t i = 0; i < lent.size(); ++i) {
    if (i != 3) BatchEncoder::release_lent(const_cast<char*>(lent[i].first), lent[i].second);
  }
}

TEST(BatchEncoder, AThousandBatchesOfGrowingSizeAllDecode) {
  BatchEncoder enc;
  DrainResult d;
  for (size_t n = 1; n <= 1000; n += 37) {
    d.clear();
    for (size_t i = 0; i < n; ++i) d.records.push_back(record(i, EventKind::kMalloc, 16 * i, n));
    d.threads.push_back({uint32_t(n), 0, n});
    Decoded got = decode(enc.encode({1, 1, n}, d, {}, 0, n));
    ASSERT_EQ(got.tids.size(), 1u);
    expect_same_records(got.events[0], d.records.data(), n);
  }
}

}  // namespace
}  // namespace memtap
