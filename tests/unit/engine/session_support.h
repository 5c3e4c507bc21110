// Session tests' common ground: wire messages built the way an agent builds them
// (MallocMessageBuilder, flat array), the rows expected back, and a fixture that collects
// the rows and strings a Session hands out. Included by each session test file.
#pragma once

#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>
#include <kj/io.h>

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "common/wire.capnp.h"
#include "monitor/engine/decode.h"
#include "monitor/engine/session.h"

namespace memtap {

inline bool operator==(const DumpRow& a, const DumpRow& b) {
  return a.event == b.event && a.event_type == b.event_type && a.is_mmap == b.is_mmap &&
         a.has_stream == b.has_stream && a.device == b.device && a.stream == b.stream &&
         a.timestamp_ns == b.timestamp_ns && a.process_id == b.process_id &&
         a.thread_id == b.thread_id && a.ptr == b.ptr && a.size_bytes == b.size_bytes &&
         a.allocation_id == b.allocation_id && a.inherited_from_pid == b.inherited_from_pid &&
         a.total_bytes == b.total_bytes && a.name == b.name && a.owner == b.owner &&
         a.stack_python == b.stack_python && a.stack_c == b.stack_c && a.step == b.step &&
         a.end_ns == b.end_ns && a.pool_used == b.pool_used && a.pool_total == b.pool_total &&
         a.free_pending == b.free_pending && a.has_pool_peaks == b.has_pool_peaks;
}

inline void PrintTo(const DumpRow& r, std::ostream* os) {
  static const char* const kEvents[] = {
      "MALLOC",    "FREE",        "SYSTEM",        "SNAPSHOT",   "MSTX",
      "OP_LAUNCH", "TRACE_SLICE", "KERNEL_LAUNCH", "OOM_DETAIL", "FREE_COMPLETED"};
  static const char* const kTypes[] = {
      "HOST",          "START_TRACE", "STOP_TRACE",    "SNAPSHOT", "STEP", "Mark",
      "Range_start",   "Range_end",   "ATEN_START",    "ATEN_END", "HAL",  "HOST_PINNED",
      "KERNEL_LAUNCH", "OOM_TRIGGER", "OOM_TOP_ALLOC", "PTA"};
  *os << "{" << kEvents[static_cast<int>(r.event)] << "/" << kTypes[static_cast<int>(r.event_type)]
      << (r.is_mmap ? " mmap" : "") << " dev=" << r.device;
  if (r.has_stream) *os << " stream=" << r.stream;
  *os << " t=" << r.timestamp_ns << " pid=" << r.process_id << " tid=" << r.thread_id << " ptr=0x"
      << std::hex << r.ptr << std::dec << " size=" << r.size_bytes << " id=" << r.allocation_id
      << " inherited=" << r.inherited_from_pid << " name=" << r.name << " owner=" << r.owner
      << " py=" << r.stack_python << " c=" << r.stack_c << " step=" << r.step
      << " end=" << r.end_ns;
  if (r.pool_used != -1 || r.pool_total != -1) {
    *os << " used=" << r.pool_used << " total=" << r.pool_total;
  }
  if (r.free_pending) *os << " pending";
  if (r.has_pool_peaks) *os << " peaks(total=" << r.total_bytes << ")";
  *os << "}";
}

namespace session_test {

using Bytes = std::vector<kj::byte>;
using Kind = wire::EventKind;

// Every process in these tests reads its clocks so that monotonic kMono0 is epoch kReal0.
constexpr uint64_t kMono0 = 1000;
constexpr int64_t kReal0 = 1'700'000'000'000'000'000;

inline int64_t epoch(uint64_t ts_ns) {
  return kReal0 + static_cast<int64_t>(ts_ns - kMono0);
}

struct Ev {
  uint64_t ts_ns;
  Kind kind;
  uint64_t addr;
  uint64_t size_bytes = 0;
  uint32_t string_id = 0;
  uint16_t device = 0;
};

// An agent's interned text: (its id, the text).
using Strings = std::vector<std::pair<uint32_t, std::string>>;

struct Thread {
  uint32_t thread_id;
  std::vector<Ev> events;
};

struct HelloArgs {
  uint32_t ppid = 1;
  uint32_t forked_from_pid = 0;
  uint64_t mono_ns = kMono0;
  uint64_t sequence = 0;
  uint32_t protocol_version = wire::PROTOCOL_VERSION;
  uint64_t memory_total_bytes = 0;
  // Hello.eventsSentBefore; none: not said, as an older agent's Hello.
  std::optional<uint64_t> events_sent_before = 0;
  // Hello.execedFrom: the instance this one replaced by exec(), and its counts.
  std::optional<WireExecedFrom> execed_from = std::nullopt;
};

inline Bytes pack(capnp::MessageBuilder& builder) {
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  return Bytes(bytes.begin(), bytes.end());
}

// The secret an instance's agent puts in its messages (Message.instanceSecret); a spoofing
// sender knows pid and instance but not this.
inline uint64_t secret_of(uint64_t instance) {
  return instance * 0x9e3779b97f4a7c15ull + 1;
}

inline wire::Message::Builder header(capnp::MessageBuilder& b, uint32_t pid, uint64_t instance,
                                     uint64_t sequence, uint32_t version = wire::PROTOCOL_VERSION) {
  auto m = b.initRoot<wire::Message>();
  m.setProtocolVersion(version);
  m.setPid(pid);
  m.setInstanceId(instance);
  m.setInstanceSecret(secret_of(instance));
  m.setSequence(sequence);
  return m;
}

inline Bytes hello(uint32_t pid, uint64_t instance, HelloArgs args = {}) {
  capnp::MallocMessageBuilder b;
  auto h = header(b, pid, instance, args.sequence, args.protocol_version).getBody().initHello();
  h.setPpid(args.ppid);
  h.setHostname("node-1");
  auto cmd = h.initCommandLine(2);
  cmd.set(0, "python");
  cmd.set(1, "train.py");
  h.setRank(3);
  h.setWorldSize(8);
  h.setClockMonotonicNs(args.mono_ns);
  h.setClockRealtimeNs(static_cast<uint64_t>(epoch(args.mono_ns)));
  h.setAgentVersion("0.1.0");
  h.setForkedFromPid(args.forked_from_pid);
  h.setMemoryTotalBytes(args.memory_total_bytes);
  if (args.events_sent_before) h.setEventsSentBefore(*args.events_sent_before);
  if (args.execed_from) {
    auto from = h.initExecedFrom();
    from.setInstanceId(args.execed_from->instance_id);
    from.setEventsSent(args.execed_from->events_sent);
    from.setDroppedTotal(args.execed_from->dropped_total);
    from.setInstanceSecret(args.execed_from->instance_secret);
  }
  return pack(b);
}

inline void fill_batch(wire::Batch::Builder batch, uint64_t watermark_ns,
                       const std::vector<Thread>& threads, uint64_t dropped_so_far,
                       const Strings& strings = {}) {
  batch.setWatermarkNs(watermark_ns);
  batch.setDroppedSoFar(dropped_so_far);
  auto defs = batch.initStrings(strings.size());
  for (size_t i = 0; i < strings.size(); ++i) {
    defs[i].setId(strings[i].first);
    defs[i].setText(strings[i].second);
  }
  auto list = batch.initThreads(threads.size());
  for (size_t t = 0; t < threads.size(); ++t) {
    list[t].setThreadId(threads[t].thread_id);
    auto events = list[t].initEvents(threads[t].events.size());
    for (size_t e = 0; e < threads[t].events.size(); ++e) {
      const Ev& ev = threads[t].events[e];
      events[e].setTsNs(ev.ts_ns);
      events[e].setKind(ev.kind);
      events[e].setAddr(ev.addr);
      events[e].setSizeBytes(ev.size_bytes);
      events[e].setStringId(ev.string_id);
      events[e].setDevice(ev.device);
    }
  }
}

inline Bytes batch(uint32_t pid, uint64_t instance, uint64_t sequence, uint64_t watermark_ns,
                   const std::vector<Thread>& threads, uint64_t dropped_so_far = 0) {
  capnp::MallocMessageBuilder b;
  fill_batch(header(b, pid, instance, sequence).getBody().initBatch(), watermark_ns, threads,
             dropped_so_far);
  return pack(b);
}

// A batch that says how many events its agent had sent before it (Batch.sentBefore).
inline Bytes counted_batch(uint32_t pid, uint64_t instance, uint64_t sequence,
                           uint64_t watermark_ns, uint64_t sent_before,
                           const std::vector<Thread>& threads) {
  capnp::MallocMessageBuilder b;
  auto batch = header(b, pid, instance, sequence).getBody().initBatch();
  fill_batch(batch, watermark_ns, threads, 0);
  batch.setSentBefore(sent_before);
  return pack(b);
}

// A batch sent over a connection the agent opened again after a failed exec
// (Message.reopened).
inline Bytes reopened_batch(uint32_t pid, uint64_t instance, uint64_t sequence,
                            uint64_t watermark_ns, const std::vector<Thread>& threads) {
  capnp::MallocMessageBuilder b;
  auto m = header(b, pid, instance, sequence);
  m.setReopened(true);
  fill_batch(m.getBody().initBatch(), watermark_ns, threads, 0);
  return pack(b);
}

// A batch that defines `strings` (before any of its events, as the agent sends them).
inline Bytes batch_with(uint32_t pid, uint64_t instance, uint64_t sequence, uint64_t watermark_ns,
                        const Strings& strings, const std::vector<Thread>& threads) {
  capnp::MallocMessageBuilder b;
  fill_batch(header(b, pid, instance, sequence).getBody().initBatch(), watermark_ns, threads, 0,
             strings);
  return pack(b);
}

inline Bytes bye(uint32_t pid, uint64_t instance, uint64_t sequence, uint64_t ts_ns,
                 uint64_t dropped_total = 0, const std::vector<uint32_t>& children = {},
                 uint64_t events_sent = 0) {
  capnp::MallocMessageBuilder b;
  auto y = header(b, pid, instance, sequence).getBody().initBye();
  y.setTsNs(ts_ns);
  y.setDroppedTotal(dropped_total);
  y.setEventsSent(events_sent);
  auto list = y.initChildPids(children.size());
  for (size_t i = 0; i < children.size(); ++i) list.set(i, children[i]);
  return pack(b);
}

inline DumpRow system_row(DumpEventType type, uint32_t pid, uint64_t ts_ns) {
  DumpRow r;
  r.event = DumpEvent::kSystem;
  r.event_type = type;
  r.timestamp_ns = epoch(ts_ns);
  r.process_id = pid;
  r.thread_id = pid;
  return r;
}

inline DumpRow start_row(uint32_t pid, uint64_t ts_ns = kMono0) {
  return system_row(DumpEventType::kStartTrace, pid, ts_ns);
}

inline DumpRow stop_row(uint32_t pid, uint64_t ts_ns) {
  return system_row(DumpEventType::kStopTrace, pid, ts_ns);
}

struct Block {
  uint64_t ptr;
  uint64_t size_bytes;
  uint64_t allocation_id;
};

inline DumpRow host_row(DumpEvent event, uint64_t ts_ns, uint32_t pid, uint32_t tid, Block b,
                        bool is_mmap, uint32_t inherited_from_pid) {
  DumpRow r;
  r.event = event;
  r.event_type = DumpEventType::kHost;
  r.is_mmap = is_mmap;
  r.timestamp_ns = epoch(ts_ns);
  r.process_id = pid;
  r.thread_id = tid;
  r.ptr = b.ptr;
  r.size_bytes = b.size_bytes;
  r.allocation_id = b.allocation_id;
  r.inherited_from_pid = inherited_from_pid;
  return r;
}

inline DumpRow malloc_row(uint64_t ts_ns, uint32_t pid, uint32_t tid, Block b) {
  return host_row(DumpEvent::kMalloc, ts_ns, pid, tid, b, false, 0);
}
inline DumpRow free_row(uint64_t ts_ns, uint32_t pid, uint32_t tid, Block b,
                        uint32_t inherited = 0) {
  return host_row(DumpEvent::kFree, ts_ns, pid, tid, b, false, inherited);
}
inline DumpRow mmap_row(uint64_t ts_ns, uint32_t pid, uint32_t tid, Block b) {
  return host_row(DumpEvent::kMalloc, ts_ns, pid, tid, b, true, 0);
}
inline DumpRow munmap_row(uint64_t ts_ns, uint32_t pid, uint32_t tid, Block b,
                          uint32_t inherited = 0) {
  return host_row(DumpEvent::kFree, ts_ns, pid, tid, b, true, inherited);
}

inline Ev ev_malloc(uint64_t ts, uint64_t addr, uint64_t size) {
  return {ts, Kind::MALLOC, addr, size};
}
inline Ev ev_free(uint64_t ts, uint64_t addr) {
  return {ts, Kind::FREE, addr, 0};
}
inline Ev ev_mmap(uint64_t ts, uint64_t addr, uint64_t size) {
  return {ts, Kind::MMAP, addr, size};
}
inline Ev ev_munmap(uint64_t ts, uint64_t addr, uint64_t size) {
  return {ts, Kind::MUNMAP, addr, size};
}
inline Ev ev_rss(uint64_t ts, uint64_t rss) {
  return {ts, Kind::RSS_SAMPLE, 0, rss};
}
inline Ev ev_fork(uint64_t ts, uint32_t child) {
  return {ts, Kind::FORK, child, 0};
}
inline Ev ev_ctx(uint64_t ts, Kind kind, uint32_t string_id = 0) {
  return {ts, kind, 0, 0, string_id};
}
inline Ev ev_step(uint64_t ts, uint64_t number) {
  return {ts, Kind::STEP, number, 0};
}

class SessionTest : public ::testing::Test {
 protected:
  void feed(const Bytes& message) {
    const IngestResult r = session.ingest(message.data(), message.size());
    ASSERT_TRUE(r.ok) << r.error;
  }

  // Feeds a message that must be rejected and checks that it changed nothing but the count.
  std::string feed_rejected(const Bytes& message) {
    return feed_rejected(message.data(), message.size());
  }
  std::string feed_rejected(const void* data, size_t size) {
    const uint64_t rejected = session.rejected_messages();
    const size_t rows_before = rows.size();
    const size_t processes_before = session.processes().size();
    const size_t held_before = session.held_events();
    const IngestResult r = session.ingest(data, size);
    EXPECT_FALSE(r.ok);
    EXPECT_FALSE(r.error.empty());
    EXPECT_EQ(session.rejected_messages(), rejected + 1);
    EXPECT_EQ(rows.size(), rows_before);
    EXPECT_EQ(session.processes().size(), processes_before);
    EXPECT_EQ(session.held_events(), held_before);
    return r.error;
  }

  ProcessInfo process(uint32_t pid) {
    for (const ProcessInfo& p : session.processes()) {
      if (p.pid == pid) return p;
    }
    ADD_FAILURE() << "no process " << pid;
    return {};
  }

  // The text of a row's string id, as the sink was given it.
  std::string text(uint32_t id) const { return id < strings.size() ? strings[id] : "<undefined>"; }

  std::vector<DumpRow> rows;
  size_t largest_handout = 0;            // the most rows the sink was given at once
  std::vector<std::string> strings{""};  // by session id, from the StringSink
  Session session{[this](const DumpRow* r, size_t n) {
                    for (size_t i = 0; i < n; ++i) {
                      // Every id a row uses was handed to the string sink before the row.
                      for (uint32_t id : {r[i].name, r[i].owner, r[i].stack_python, r[i].stack_c})
                        EXPECT_LT(id, strings.size()) << "row uses a string not yet defined";
                    }
                    rows.insert(rows.end(), r, r + n);
                    largest_handout = std::max(largest_handout, n);
                  },
                  [this](uint32_t id, std::string_view t) {
                    EXPECT_EQ(id, strings.size()) << "string ids come in order";
                    strings.emplace_back(t);
                  }};
};

constexpr uint32_t kPid = 100;
constexpr uint32_t kPid2 = 300;
constexpr uint32_t kChild = 200;
constexpr uint64_t kInst = 0xabc;
constexpr uint64_t kInst2 = 0xdef;
constexpr uint64_t kChildInst = 0x123;
constexpr uint64_t kFar = 1'000'000;  // a watermark past every event of a test

}  // namespace session_test
}  // namespace memtap
