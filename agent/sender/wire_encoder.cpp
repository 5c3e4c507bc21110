// Cap'n Proto encoding of Hello / Batch / Bye (unpacked, one ZeroMQ message each).
#include "agent/sender/wire_encoder.h"

#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "agent/sender/memory_sampler.h"
#include "common/wire.capnp.h"

namespace memtap {

static_assert(uint32_t(EventKind::kMalloc) == uint32_t(wire::EventKind::MALLOC));
static_assert(uint32_t(EventKind::kFree) == uint32_t(wire::EventKind::FREE));
static_assert(uint32_t(EventKind::kMmap) == uint32_t(wire::EventKind::MMAP));
static_assert(uint32_t(EventKind::kMunmap) == uint32_t(wire::EventKind::MUNMAP));
static_assert(uint32_t(EventKind::kFork) == uint32_t(wire::EventKind::FORK));
static_assert(uint32_t(EventKind::kRssSample) == uint32_t(wire::EventKind::RSS_SAMPLE));
static_assert(uint32_t(EventKind::kStep) == uint32_t(wire::EventKind::STEP));
static_assert(uint32_t(EventKind::kMark) == uint32_t(wire::EventKind::MARK));
static_assert(uint32_t(EventKind::kRangeStart) == uint32_t(wire::EventKind::RANGE_START));
static_assert(uint32_t(EventKind::kRangeEnd) == uint32_t(wire::EventKind::RANGE_END));
static_assert(uint32_t(EventKind::kOwnerPush) == uint32_t(wire::EventKind::OWNER_PUSH));
static_assert(uint32_t(EventKind::kOwnerPop) == uint32_t(wire::EventKind::OWNER_POP));
static_assert(uint32_t(EventKind::kOpStart) == uint32_t(wire::EventKind::OP_START));
static_assert(uint32_t(EventKind::kOpEnd) == uint32_t(wire::EventKind::OP_END));
static_assert(uint32_t(EventKind::kPythonStack) == uint32_t(wire::EventKind::PYTHON_STACK));
static_assert(uint32_t(EventKind::kCStack) == uint32_t(wire::EventKind::C_STACK));
static_assert(uint32_t(EventKind::kTraceSlice) == uint32_t(wire::EventKind::TRACE_SLICE));
static_assert(uint32_t(EventKind::kDeviceMalloc) == uint32_t(wire::EventKind::DEVICE_MALLOC));
static_assert(uint32_t(EventKind::kDeviceFree) == uint32_t(wire::EventKind::DEVICE_FREE));
static_assert(uint32_t(EventKind::kPinnedMalloc) == uint32_t(wire::EventKind::PINNED_MALLOC));
static_assert(uint32_t(EventKind::kPinnedFree) == uint32_t(wire::EventKind::PINNED_FREE));
static_assert(uint32_t(EventKind::kKernelLaunch) == uint32_t(wire::EventKind::KERNEL_LAUNCH));
static_assert(uint32_t(EventKind::kDeviceOom) == uint32_t(wire::EventKind::DEVICE_OOM));
static_assert(uint32_t(EventKind::kDeviceInfo) == uint32_t(wire::EventKind::DEVICE_INFO));
static_assert(uint32_t(EventKind::kDeviceStream) == uint32_t(wire::EventKind::DEVICE_STREAM));
static_assert(uint32_t(EventKind::kPoolMalloc) == uint32_t(wire::EventKind::POOL_MALLOC));
static_assert(uint32_t(EventKind::kPoolFree) == uint32_t(wire::EventKind::POOL_FREE));
static_assert(uint32_t(EventKind::kPoolFreeCompleted) ==
              uint32_t(wire::EventKind::POOL_FREE_COMPLETED));
static_assert(uint32_t(EventKind::kPoolState) == uint32_t(wire::EventKind::POOL_STATE));
static_assert(uint32_t(EventKind::kPoolPeaks) == uint32_t(wire::EventKind::POOL_PEAKS));

namespace {

wire::Message::Builder start(capnp::MallocMessageBuilder& mb, const MessageHeader& h) {
  auto m = mb.initRoot<wire::Message>();
  m.setProtocolVersion(wire::PROTOCOL_VERSION);
  m.setPid(h.pid);
  m.setInstanceId(h.instance_id);
  m.setInstanceSecret(h.instance_secret);
  m.setSequence(h.sequence);
  m.setReopened(h.reopened);
  return m;
}

// Unpacked: packing costs ~80 ns per event on the sender thread (inside the training
// process) against ~6 ns for the flat array, and the IPC socket does not care about size.
std::string pack(capnp::MallocMessageBuilder& mb) {
  auto words = capnp::messageToFlatArray(mb);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

}  // namespace

std::string encode_hello(const MessageHeader& h, const MemtapSenderConfig& c,
                         uint64_t trace_start_ns, uint64_t events_sent_before) {
  capnp::MallocMessageBuilder mb;
  auto hello = start(mb, h).getBody().initHello();
  hello.setPpid(c.ppid);
  hello.setHostname(c.hostname ? c.hostname : "");
  std::vector<kj::StringPtr> args;
  for (size_t i = 0; i < c.cmdline_len;) {
    const char* arg = c.cmdline + i;
    size_t n = strnlen(arg, c.cmdline_len - i);
    args.emplace_back(arg, n);  // /proc/self/cmdline ends each argument with NUL
    i += n + 1;
  }
  auto list = hello.initCommandLine(unsigned(args.size()));
  for (size_t i = 0; i < args.size(); ++i) list.set(unsigned(i), args[i]);
  hello.setRank(c.rank);
  hello.setWorldSize(c.world_size);
  hello.setClockMonotonicNs(c.clock_monotonic_ns);
  hello.setClockRealtimeNs(c.clock_realtime_ns);
  hello.setAgentVersion(c.agent_version ? c.agent_version : "");
  hello.setForkedFromPid(c.forked_from_pid);
  hello.setTraceStartNs(trace_start_ns);
  hello.setMemoryTotalBytes(MemorySampler::memory_total_bytes());
  hello.setEventsSentBefore(events_sent_before);
  if (c.execed_from.said) {
    auto from = hello.initExecedFrom();
    from.setInstanceId(c.execed_from.instance_id);
    from.setEventsSent(c.execed_from.events_sent);
    from.setDroppedTotal(c.execed_from.dropped_total);
    from.setInstanceSecret(c.execed_from.instance_secret);
  }
  return pack(mb);
}

namespace {

// wire::Event's bytes in a message built with the generated setters from a record with a
// distinct value in every field, against the record's own bytes.
bool records_match_schema() {
  EventRecord r{};
  r.ts_ns = 0x0102030405060708;
  r.kind = uint16_t(EventKind::kTraceSlice);
  r.device = 0x0a0b;
  r.string_id = 0x11121314;
  r.addr = 0x2122232425262728;
  r.size_bytes = 0x3132333435363738;
  capnp::MallocMessageBuilder mb;
  auto e = mb.initRoot<wire::Event>();
  e.setTsNs(r.ts_ns);
  e.setKind(wire::EventKind(r.kind));
  e.setStringId(r.string_id);
  e.setDevice(r.device);
  e.setAddr(r.addr);
  e.setSizeBytes(r.size_bytes);
  capnp::AnyStruct::Builder any(kj::mv(e));
  auto data = any.getDataSection();
  // No pointer section either: list elements are then exactly one record apart.
  return data.size() == sizeof r && any.getPointerSection().size() == 0 &&
         memcmp(data.begin(), &r, sizeof r) == 0;
}

void set_events(capnp::List<wire::Event>::Builder events, const EventRecord* records, size_t count,
                bool copy_records) {
  if (count == 0) return;
  if (copy_records) {
    // A struct list with no pointers lies element after element, each its data section.
    memcpy(capnp::AnyStruct::Builder(events[0]).getDataSection().begin(), records,
           count * sizeof(EventRecord));
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const EventRecord& r = records[i];
    auto e = events[unsigned(i)];
    e.setTsNs(r.ts_ns);
    e.setKind(wire::EventKind(r.kind));
    e.setAddr(r.addr);
    e.setSizeBytes(r.size_bytes);
    e.setStringId(r.string_id);
    e.setDevice(r.device);
  }
}

}  // namespace

BatchEncoder::BatchEncoder()
    : records_match_schema_(records_match_schema()), copy_records_(records_match_schema_) {}

// The sender lives as long as its process; an encoder ends only in tests, where nothing is
// lent to ZeroMQ any more.
BatchEncoder::~BatchEncoder() = default;

BatchEncoder::Buffer* BatchEncoder::find_free() const {
  for (const auto& b : pool_) {
    if (!b->lent.load(std::memory_order_acquire)) return b.get();
  }
  return nullptr;
}

bool BatchEncoder::wait_for_room(int timeout_ms) {
  auto has_room = [&] { return pool_.size() < kMaxBuffers || find_free() != nullptr; };
  if (has_room()) return true;
  if (timeout_ms <= 0) return false;
  std::unique_lock<std::mutex> lock(returned_mutex_);
  return returned_.wait_for(lock, std::chrono::milliseconds(timeout_ms), has_room);
}

BatchEncoder::Buffer* BatchEncoder::free_buffer() {
  if (Buffer* b = find_free()) return b;
  // No room (wait_for_room said no) is the caller's error; a batch beyond the bound is still
  // better than none.
  pool_.push_back(std::make_unique<Buffer>());
  pool_.back()->owner = this;
  return pool_.back().get();
}

std::string_view BatchEncoder::encode(const MessageHeader& h, const DrainResult& drained,
                                      const std::vector<StringText>& strings,
                                      uint64_t dropped_so_far, uint64_t watermark_ns,
                                      uint64_t sent_before,
                                      const std::vector<ScannedModule>& modules) {
  Buffer* b = free_buffer();
  last_ = nullptr;
  b->builder.reset();  // zeroes what the previous message in this buffer used
  // One segment big enough for the whole batch, after one word for the segment table.
  size_t text_words = 0;
  for (const StringText& t : strings) text_words += 3 + (t.length + 8) / 8;
  for (const ScannedModule& m : modules) {
    text_words += 8 + (m.path.size() + 8) / 8 + (m.build_id.size() + 7) / 8;
  }
  size_t words = 1 + 64 + drained.threads.size() * 8 + drained.records.size() * 5 + text_words;
  words = std::min<size_t>(words, size_t{1} << 28);
  // A new vector of zeroed words, not assign(): Cap'n Proto disallows copying a word when
  // the compiler is clang (capnp/common.h), as the sanitizer builds' is.
  if (b->words.size() < words) b->words = std::vector<capnp::word>(words);
  auto& builder = b->builder.emplace(kj::arrayPtr(b->words.data() + 1, b->words.size() - 1));
  auto batch = start(builder, h).getBody().initBatch();
  batch.setDroppedSoFar(dropped_so_far);
  batch.setWatermarkNs(watermark_ns);
  batch.setSentBefore(sent_before);
  if (!strings.empty()) {
    auto defs = batch.initStrings(unsigned(strings.size()));
    for (size_t i = 0; i < strings.size(); ++i) {
      defs[unsigned(i)].setId(strings[i].id);
      defs[unsigned(i)].setText(capnp::Text::Reader(strings[i].text, strings[i].length));
    }
  }
  if (!modules.empty()) {
    auto list = batch.initModules(unsigned(modules.size()));
    for (size_t i = 0; i < modules.size(); ++i) {
      const ScannedModule& m = modules[i];
      auto out = list[unsigned(i)];
      out.setPath(m.path);
      out.setLoadBias(m.load_bias);
      out.setStart(m.start);
      out.setEnd(m.end);
      out.setBuildId(capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(m.build_id.data()),
                                         m.build_id.size()));
    }
  }
  auto threads = batch.initThreads(unsigned(drained.threads.size()));
  for (size_t t = 0; t < drained.threads.size(); ++t) {
    const DrainedThread& dt = drained.threads[t];
    auto te = threads[unsigned(t)];
    te.setThreadId(dt.tid);
    set_events(te.initEvents(unsigned(dt.count)), drained.records.data() + dt.first, dt.count,
               copy_records_);
  }
  auto segments = builder.getSegmentsForOutput();
  if (segments.size() != 1) {
    spilled_ = pack(builder);
    return spilled_;
  }
  // The flat form of a one-segment message: (segment count - 1, segment size) and the segment.
  uint32_t table[2] = {0, uint32_t(segments[0].size())};
  memcpy(b->words.data(), table, sizeof table);
  last_ = b;
  return {reinterpret_cast<const char*>(b->words.data()),
          (1 + segments[0].size()) * sizeof(capnp::word)};
}

void* BatchEncoder::lend(std::string_view bytes) {
  if (!last_ || bytes.data() != reinterpret_cast<const char*>(last_->words.data())) return nullptr;
  last_->lent.store(true, std::memory_order_relaxed);
  return last_;
}

void BatchEncoder::release_lent(void*, void* hint) {
  auto* b = static_cast<Buffer*>(hint);
  BatchEncoder* owner = b->owner;
  {
    // Under the mutex, so that a wait_for_room between its check and its sleep cannot miss it.
    std::lock_guard<std::mutex> lock(owner->returned_mutex_);
    b->lent.store(false, std::memory_order_release);
  }
  owner->returned_.notify_one();
}

std::string encode_bye(const MessageHeader& h, uint64_t ts_ns, uint64_t dropped_total,
                       uint64_t events_sent, const std::vector<uint32_t>& child_pids, int32_t end,
                       int32_t end_code) {
  capnp::MallocMessageBuilder mb;
  auto bye = start(mb, h).getBody().initBye();
  bye.setTsNs(ts_ns);
  bye.setDroppedTotal(dropped_total);
  bye.setEventsSent(events_sent);
  auto list = bye.initChildPids(unsigned(child_pids.size()));
  for (size_t i = 0; i < child_pids.size(); ++i) list.set(unsigned(i), child_pids[i]);
  bye.setEnd(static_cast<wire::ProcessEnd>(end));
  bye.setEndCode(end_code);
  return pack(mb);
}

}  // namespace memtap
