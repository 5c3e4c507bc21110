// Cap'n Proto (unpacked, one flat array) -> WireMessage, with every check the engine relies on (see
// decode.h).
#include "monitor/engine/decode.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/array.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <string_view>
#include <vector>

#include "common/wire.capnp.h"

namespace memtap {
namespace {

constexpr uint64_t kMaxTime = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// Messages are not packed: packing cost the agent's sender 80 ns per event against 6 ns
// for the flat form, and that CPU is taken from the training process. A flat message
// cannot claim more words than it has, so the traversal limit is its own size with room
// for capnp's accounting of zero-sized list elements.
constexpr uint64_t kTraversalWordsPerWord = 4;
constexpr uint64_t kTraversalSlackWords = 64;
// Message -> Batch -> List(ThreadEvents) -> ThreadEvents -> List(Event) -> Event is six.
constexpr int kNestingLimit = 16;

// What the lists of a message may claim. Their elements are decoded into vectors, so a
// list must pay for its elements in the message's own bytes: a protocol-3 agent writes an
// Event in 4 words, a ThreadEvents or a StringDef in 2 (a data word and a pointer), a
// command-line argument in a pointer at least. Cap'n Proto lets a list of zero-sized structs
// (a struct smaller than ours is valid schema evolution) claim up to 2^29 elements in one
// word; its traversal limit counts each as a word, and ours allows four words per word of
// message: a 256 MiB message could still claim 128 M events, ~5 GiB decoded and then held.
// With the budget a message decodes to at most ~1.3 times its size.
class ElementBudget {
 public:
  explicit ElementBudget(size_t message_bytes) : words_(message_bytes / sizeof(capnp::word)) {}

  // False, with `error` naming `field`, when the message cannot hold `count` more elements of
  // `words_each` words. `field` is a callable: the path is built only when it is needed.
  template <typename Field>
  bool take(size_t count, size_t words_each, Field field, std::string& error) {
    const uint64_t need = uint64_t(count) * words_each;
    if (need <= words_ - used_) {
      used_ += need;
      return true;
    }
    error = std::string(field()) + ": " + std::to_string(count) + " elements of at least " +
            std::to_string(words_each * sizeof(capnp::word)) + " bytes declared, but the " +
            "message holds " + std::to_string(words_ * sizeof(capnp::word)) +
            " bytes with its other lists";
    return false;
  }

 private:
  uint64_t words_;
  uint64_t used_ = 0;
};

constexpr size_t kEventWords = 4;
constexpr size_t kThreadEventsWords = 2;
constexpr size_t kStringDefWords = 2;
constexpr size_t kLoadedModuleWords = 5;  // three data words, two pointers

bool check_text(size_t size, size_t limit, std::string_view field, std::string& error) {
  if (size <= limit) return true;
  error = std::string(field) + ": " + std::to_string(size) + " bytes, expected at most " +
          std::to_string(limit);
  return false;
}

std::string at(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

bool check_time(uint64_t value, std::string_view field, std::string& error) {
  if (value <= kMaxTime) return true;
  error = std::string(field) + ": " + std::to_string(value) +
          " out of range, expected a time below 2^63 ns";
  return false;
}

// The kinds whose sizeBytes is the size of a block (or of the process), in words; nullptr
// for the others.
const char* sized_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::kMalloc:
      return "malloc";
    case EventKind::kMmap:
      return "mmap";
    case EventKind::kDeviceMalloc:
      return "device block";
    case EventKind::kPinnedMalloc:
      return "pinned block";
    case EventKind::kPoolMalloc:
      return "pool block";
    case EventKind::kRssSample:
      return "RSS sample";
    default:
      return nullptr;
  }
}

// On failure `error` starts at the field (".kind: ..."): the caller prepends the event's
// path, which is built only then because this is the hot loop.
bool decode_event(wire::Event::Reader in, WireEvent& out, std::string& error) {
  // Cap'n Proto hands unknown enumerants through as raw numbers; a newer agent's event
  // kind must not be mistaken for one of ours.
  const auto raw_kind = static_cast<uint16_t>(in.getKind());
  if (raw_kind > static_cast<uint16_t>(EventKind::kPoolPeaks)) {
    error = ".kind: unknown value " + std::to_string(raw_kind) +
            ", expected malloc .. poolPeaks (0..29)";
    return false;
  }
  out.kind = static_cast<EventKind>(raw_kind);
  out.ts_ns = in.getTsNs();
  out.addr = in.getAddr();
  out.size_bytes = in.getSizeBytes();
  out.string_id = in.getStringId();
  // Only device and pool events name a device; the wire sends 0 for the others, and anything else
  // there is ignored rather than carried into rows that have no device.
  out.device = is_device_kind(out.kind) ? in.getDevice() : 0;
  if (!check_time(out.ts_ns, ".tsNs", error)) return false;
  if (out.kind == EventKind::kDeviceInfo) {
    if (out.size_bytes > kMaxTime) {
      error = ".sizeBytes: device total " + std::to_string(out.size_bytes) +
              " out of range, expected below 2^63 bytes";
      return false;
    }
    if (out.addr > out.size_bytes) {
      error = ".addr: device free bytes " + std::to_string(out.addr) + " above its total " +
              std::to_string(out.size_bytes);
      return false;
    }
  }
  // A block's size (and a sampled RSS) becomes an int64 byte count downstream: the recording's
  // Size column, the curves' totals, which saturate rather than wrap. No allocation of 2^63
  // bytes or more succeeds, and the agent records only those that did.
  if (const char* what = sized_kind_name(out.kind); what && out.size_bytes > kMaxTime) {
    error = std::string(".sizeBytes: ") + what + " of " + std::to_string(out.size_bytes) +
            " bytes out of range, expected below 2^63";
    return false;
  }
  if (out.kind == EventKind::kPoolState || out.kind == EventKind::kPoolPeaks) {
    const char* max = out.kind == EventKind::kPoolPeaks ? "max " : "";
    if (out.addr > kMaxTime) {
      error = std::string(".addr: pool ") + max + "allocated bytes " + std::to_string(out.addr) +
              " out of range, expected below 2^63";
      return false;
    }
    if (out.size_bytes > kMaxTime) {
      error = std::string(".sizeBytes: pool ") + max + "reserved bytes " +
              std::to_string(out.size_bytes) + " out of range, expected below 2^63";
      return false;
    }
  }
  if (out.kind == EventKind::kTraceSlice &&
      (!check_time(out.addr, ".addr (trace slice start)", error) ||
       !check_time(out.size_bytes, ".sizeBytes (trace slice end)", error))) {
    return false;
  }
  if (out.kind == EventKind::kFork &&
      (out.addr == 0 || out.addr > std::numeric_limits<uint32_t>::max())) {
    error = ".addr: fork child pid " + std::to_string(out.addr) +
            " out of range, expected 1..4294967295";
    return false;
  }
  return true;
}

bool decode_batch(wire::Batch::Reader in, WireBatch& out, ElementBudget& budget,
                  std::string& error) {
  out.dropped_so_far = in.getDroppedSoFar();
  out.watermark_ns = in.getWatermarkNs();
  if (in.getSentBefore() != ~uint64_t{0}) out.sent_before = in.getSentBefore();
  if (!check_time(out.watermark_ns, "batch.watermarkNs", error)) return false;
  const auto strings = in.getStrings();
  if (!budget.take(
          strings.size(), kStringDefWords, [] { return "batch.strings"; }, error))
    return false;
  out.strings.resize(strings.size());
  for (size_t s = 0; s < strings.size(); ++s) {
    const auto def = strings[s];
    WireString& dst = out.strings[s];
    dst.id = def.getId();
    if (dst.id == 0) {
      error = at("batch.strings", s) + ".id: 0, expected an id from 1 (0 means no text)";
      return false;
    }
    const auto text = def.getText();
    if (text.size() > kMaxStringBytes) {
      error = at("batch.strings", s) + ".text: " + std::to_string(text.size()) +
              " bytes, expected at most " + std::to_string(kMaxStringBytes);
      return false;
    }
    dst.text.assign(text.cStr(), text.size());
  }
  const auto modules = in.getModules();
  if (!budget.take(
          modules.size(), kLoadedModuleWords, [] { return "batch.modules"; }, error))
    return false;
  out.modules.resize(modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto module = modules[i];
    LoadedModule& dst = out.modules[i];
    const auto path = module.getPath();
    const auto build_id = module.getBuildId();
    if (!check_text(path.size(), kMaxModulePathBytes, at("batch.modules", i) + ".path", error) ||
        !check_text(build_id.size(), kMaxBuildIdBytes, at("batch.modules", i) + ".buildId",
                    error)) {
      return false;
    }
    dst.path.assign(path.cStr(), path.size());
    if (dst.path != "[vdso]" &&
        (dst.path.empty() || dst.path[0] != '/' || dst.path.find('\0') != std::string::npos)) {
      error = at("batch.modules", i) + ".path: \"" + dst.path.substr(0, 200) +
              "\", expected an absolute path or [vdso]";
      return false;
    }
    dst.load_bias = module.getLoadBias();
    dst.start = module.getStart();
    dst.end = module.getEnd();
    if (dst.start > dst.end) {
      error = at("batch.modules", i) + ": start " + std::to_string(dst.start) + " above end " +
              std::to_string(dst.end) + ", expected start <= end";
      return false;
    }
    dst.build_id.assign(reinterpret_cast<const char*>(build_id.begin()), build_id.size());
  }
  const auto threads = in.getThreads();
  if (!budget.take(
          threads.size(), kThreadEventsWords, [] { return "batch.threads"; }, error))
    return false;
  out.threads.resize(threads.size());
  for (size_t t = 0; t < threads.size(); ++t) {
    const auto thread = threads[t];
    WireThreadEvents& dst = out.threads[t];
    dst.thread_id = thread.getThreadId();
    const auto events = thread.getEvents();
    auto field = [t] { return at("batch.threads", t) + ".events"; };
    if (!budget.take(events.size(), kEventWords, field, error)) return false;
    dst.events.resize(events.size());
    for (size_t e = 0; e < events.size(); ++e) {
      if (!decode_event(events[e], dst.events[e], error)) {
        error = at(at("batch.threads", t) + ".events", e) + error;
        return false;
      }
    }
  }
  return true;
}

bool decode_hello(wire::Hello::Reader in, WireHello& out, ElementBudget& budget,
                  std::string& error) {
  out.ppid = in.getPpid();
  const auto hostname = in.getHostname();
  const auto agent_version = in.getAgentVersion();
  const auto command_line = in.getCommandLine();
  if (!check_text(hostname.size(), kMaxHostnameBytes, "hello.hostname", error) ||
      !check_text(agent_version.size(), kMaxAgentVersionBytes, "hello.agentVersion", error) ||
      !budget.take(
          command_line.size(), 1, [] { return "hello.commandLine"; }, error)) {
    return false;
  }
  size_t command_line_bytes = 0;
  for (auto arg : command_line) command_line_bytes += arg.size() + 1;
  if (!check_text(command_line_bytes, kMaxCommandLineBytes, "hello.commandLine", error)) {
    return false;
  }
  out.hostname = hostname;
  out.command_line.reserve(command_line.size());
  for (auto arg : command_line) out.command_line.emplace_back(arg);
  out.rank = in.getRank();
  out.world_size = in.getWorldSize();
  out.clock_monotonic_ns = in.getClockMonotonicNs();
  out.clock_realtime_ns = in.getClockRealtimeNs();
  out.agent_version = agent_version;
  out.forked_from_pid = in.getForkedFromPid();
  out.trace_start_ns = in.getTraceStartNs();
  out.memory_total_bytes = in.getMemoryTotalBytes();
  // All ones, the schema's default, is "not said".
  if (const uint64_t before = in.getEventsSentBefore(); before != ~uint64_t{0}) {
    out.events_sent_before = before;
  }
  if (in.hasExecedFrom()) {
    const auto from = in.getExecedFrom();
    out.execed_from = WireExecedFrom{from.getInstanceId(), from.getEventsSent(),
                                     from.getDroppedTotal(), from.getInstanceSecret()};
  }
  return check_time(out.clock_monotonic_ns, "hello.clockMonotonicNs", error) &&
         check_time(out.clock_realtime_ns, "hello.clockRealtimeNs", error) &&
         check_time(out.trace_start_ns, "hello.traceStartNs", error);
}

bool decode_bye(wire::Bye::Reader in, WireBye& out, std::string& error) {
  out.ts_ns = in.getTsNs();
  out.dropped_total = in.getDroppedTotal();
  out.events_sent = in.getEventsSent();
  const auto child_pids = in.getChildPids();
  if (child_pids.size() > kMaxByeChildPids) {
    error = "bye.childPids: " + std::to_string(child_pids.size()) + " pids, expected at most " +
            std::to_string(kMaxByeChildPids);
    return false;
  }
  for (uint32_t pid : child_pids) out.child_pids.push_back(pid);
  // An enumerant this monitor does not know (a newer agent's) reads as unknown.
  const auto end = static_cast<uint16_t>(in.getEnd());
  out.end = end <= uint16_t(ProcessEnd::kExeced) ? ProcessEnd(end) : ProcessEnd::kUnknown;
  out.end_code = in.getEndCode();
  return check_time(out.ts_ns, "bye.tsNs", error);
}

bool decode_root(wire::Message::Reader in, WireMessage& out, ElementBudget& budget,
                 DecodeError& why, std::string& error) {
  const uint32_t version = in.getProtocolVersion();
  if (version != wire::PROTOCOL_VERSION) {
    why = DecodeError::kProtocolVersion;
    error = "protocol version " + std::to_string(version) + ", expected " +
            std::to_string(wire::PROTOCOL_VERSION) + " (field protocolVersion)";
    return false;
  }
  out.pid = in.getPid();
  out.instance_id = in.getInstanceId();
  out.instance_secret = in.getInstanceSecret();
  out.sequence = in.getSequence();
  out.reopened = in.getReopened();
  const auto body = in.getBody();
  switch (body.which()) {
    case wire::Message::Body::HELLO:
      out.body = WireBodyKind::kHello;
      return decode_hello(body.getHello(), out.hello, budget, error);
    case wire::Message::Body::BATCH:
      out.body = WireBodyKind::kBatch;
      return decode_batch(body.getBatch(), out.batch, budget, error);
    case wire::Message::Body::BYE:
      out.body = WireBodyKind::kBye;
      return decode_bye(body.getBye(), out.bye, error);
  }
  error = "body: unknown union tag " + std::to_string(static_cast<uint16_t>(body.which())) +
          ", expected hello, batch or bye (0..2)";
  return false;
}

}  // namespace

DecodeResult decode_message(const void* data, size_t size) {
  DecodeResult result;
  result.why = DecodeError::kMalformed;  // unless it is ok, or another protocol version
  if (size > kMaxMessageBytes) {
    result.error = "message of " + std::to_string(size) + " bytes, expected at most " +
                   std::to_string(kMaxMessageBytes);
    return result;
  }
  if (size == 0 || data == nullptr) {
    result.error = "empty message, expected a wire::Message";
    return result;
  }
  if (size % sizeof(capnp::word) != 0) {
    result.error = "message of " + std::to_string(size) +
                   " bytes is not a whole number of 8-byte words, expected one wire::Message";
    return result;
  }
  try {
    // ZeroMQ gives no alignment promise for message data; Cap'n Proto reads words.
    // (kj::heapArray, not std::vector: capnp::word can be neither copied nor moved, and
    // clang refuses vector<capnp::word>::resize for it.)
    kj::Array<capnp::word> copy;
    const capnp::word* words = static_cast<const capnp::word*>(data);
    if (reinterpret_cast<uintptr_t>(data) % alignof(capnp::word) != 0) {
      copy = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
      memcpy(copy.begin(), data, size);
      words = copy.begin();
    }
    kj::ArrayPtr<const capnp::word> array(words, size / sizeof(capnp::word));
    capnp::ReaderOptions options;
    options.traversalLimitInWords = array.size() * kTraversalWordsPerWord + kTraversalSlackWords;
    options.nestingLimit = kNestingLimit;
    capnp::FlatArrayMessageReader reader(array, options);
    ElementBudget budget(size);
    result.ok = decode_root(reader.getRoot<wire::Message>(), result.message, budget, result.why,
                            result.error);
    const size_t trailing = size_t(array.end() - reader.getEnd()) * sizeof(capnp::word);
    if (result.ok && trailing != 0) {
      result.ok = false;
      result.error = std::to_string(trailing) +
                     " bytes after the end of the message, expected exactly one wire::Message";
    }
  } catch (const kj::Exception& e) {
    result.ok = false;
    result.why = DecodeError::kMalformed;
    result.error = std::string("not a valid wire::Message: ") + e.getDescription().cStr();
  } catch (const std::exception& e) {
    result.ok = false;
    result.why = DecodeError::kMalformed;
    result.error = std::string("decoding failed: ") + e.what();
  }
  if (result.ok) result.why = DecodeError::kNone;
  return result;
}

}  // namespace memtap
