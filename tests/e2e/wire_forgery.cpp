// See wire_forgery.h.
#include "tests/e2e/wire_forgery.h"

#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <time.h>

#include <cstring>

#include "common/wire.capnp.h"

namespace memtap::e2e {
namespace {

uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

wire::Message::Builder start(capnp::MessageBuilder& b, const ForgedHeader& h) {
  auto m = b.initRoot<wire::Message>();
  m.setProtocolVersion(h.protocol_version != 0 ? h.protocol_version : wire::PROTOCOL_VERSION);
  m.setPid(h.pid);
  m.setInstanceId(h.instance_id);
  m.setInstanceSecret(h.instance_secret);
  m.setSequence(h.sequence);
  return m;
}

std::string flat(capnp::MessageBuilder& b) {
  auto words = capnp::messageToFlatArray(b);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

}  // namespace

std::string forged_hello(const ForgedHeader& h, const std::string& hostname,
                         uint64_t trace_start_ns) {
  capnp::MallocMessageBuilder b;
  auto hello = start(b, h).getBody().initHello();
  hello.setPpid(1);
  hello.setHostname(hostname);
  hello.initCommandLine(1).set(0, "forged");
  hello.setRank(-1);
  hello.setWorldSize(-1);
  hello.setClockMonotonicNs(clock_ns(CLOCK_MONOTONIC));
  hello.setClockRealtimeNs(clock_ns(CLOCK_REALTIME));
  hello.setAgentVersion("forged");
  hello.setEventsSentBefore(0);
  hello.setTraceStartNs(trace_start_ns);
  return flat(b);
}

std::string forged_batch(const ForgedHeader& h, uint32_t tid,
                         const std::vector<ForgedEvent>& events) {
  const uint64_t now = clock_ns(CLOCK_MONOTONIC);
  return forged_batch_at(h, tid, events, now, 1, now + events.size());
}

std::string forged_batch_at(const ForgedHeader& h, uint32_t tid,
                            const std::vector<ForgedEvent>& events, uint64_t first_ns,
                            uint64_t step_ns, uint64_t watermark_ns) {
  capnp::MallocMessageBuilder b;
  auto batch = start(b, h).getBody().initBatch();
  auto thread = batch.initThreads(1)[0];
  thread.setThreadId(tid);
  auto list = thread.initEvents(unsigned(events.size()));
  for (size_t i = 0; i < events.size(); ++i) {
    list[unsigned(i)].setTsNs(first_ns + i * step_ns);
    list[unsigned(i)].setKind(events[i].size != 0 ? wire::EventKind::MALLOC
                                                  : wire::EventKind::FREE);
    list[unsigned(i)].setAddr(events[i].addr);
    list[unsigned(i)].setSizeBytes(events[i].size);
  }
  batch.setWatermarkNs(watermark_ns);
  return flat(b);
}

std::string forged_bye(const ForgedHeader& h, uint64_t events_sent) {
  capnp::MallocMessageBuilder b;
  auto bye = start(b, h).getBody().initBye();
  bye.setTsNs(clock_ns(CLOCK_MONOTONIC));
  bye.setEventsSent(events_sent);
  bye.setEnd(wire::ProcessEnd::EXITED);
  return flat(b);
}

std::string batch_claiming_events(const ForgedHeader& h, unsigned claimed) {
  capnp::MallocMessageBuilder b;
  auto batch = start(b, h).getBody().initBatch();
  auto pad = batch.initStrings(1)[0];
  pad.setId(1);
  pad.setText(std::string(8000, 'p'));
  auto thread = batch.initThreads(1)[0];
  thread.setThreadId(1);
  capnp::AnyStruct::Builder(kj::mv(thread))
      .getPointerSection()[0]
      .initAsListOfAnyStruct(0, 0, claimed);
  return flat(b);
}

ReadHeader read_header(const void* data, size_t size) {
  ReadHeader out;
  if (size % sizeof(capnp::word) != 0) return out;
  std::vector<capnp::word> words(size / sizeof(capnp::word));
  memcpy(words.data(), data, size);
  try {
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words.data(), words.size()));
    auto m = reader.getRoot<wire::Message>();
    out.pid = m.getPid();
    out.instance_id = m.getInstanceId();
    switch (m.getBody().which()) {
      case wire::Message::Body::HELLO:
        out.body = 'h';
        out.events_sent_before = m.getBody().getHello().getEventsSentBefore();
        break;
      case wire::Message::Body::BATCH:
        out.body = 'b';
        for (auto thread : m.getBody().getBatch().getThreads()) {
          for (auto e : thread.getEvents()) {
            ++out.events;
            if (e.getKind() == wire::EventKind::MALLOC) ++out.malloc_sizes[e.getSizeBytes()];
          }
        }
        break;
      case wire::Message::Body::BYE:
        out.body = 'y';
        break;
    }
    out.ok = true;
  } catch (...) {
    out.ok = false;
  }
  return out;
}

}  // namespace memtap::e2e
