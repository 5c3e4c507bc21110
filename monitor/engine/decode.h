// Turns one untrusted ZeroMQ message body into plain structs, or says why it cannot.
//
// This is the only file of the engine that touches Cap'n Proto. Everything the rest of the
// engine relies on is checked here, so that applying a decoded message cannot fail halfway:
// the size and traversal limits (and no more list elements than the message has words, so
// that a message decodes into memory in proportion to its size), the protocol version,
// every enum and union tag, and the ranges that later arithmetic needs (times below 2^63,
// fork child pids that fit a pid_t, trace slice bounds, a device's capacity, a pool's block
// sizes and figures). String ids are
// not resolved here: a definition may come in a later batch, so the session resolves them
// when an event leaves its reorder buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/event_record.h"
#include "common/process_end.h"
#include "monitor/symbols/symbolizer.h"

namespace memtap {

// Larger messages are refused before decoding; an agent's batches are a few MiB at most.
inline constexpr size_t kMaxMessageBytes = size_t{256} << 20;

// What a Hello may carry: the agent sends uname's nodename (at most 64 bytes; its buffer
// holds 255) and /proc/self/cmdline truncated to 32 KiB. A pending Hello is kept until its
// process says more (session.h), so its size must not be whatever a sender likes.
inline constexpr size_t kMaxHostnameBytes = 255;
inline constexpr size_t kMaxAgentVersionBytes = 255;
inline constexpr size_t kMaxCommandLineBytes = size_t{64} << 10;  // each argument + 1
// Bye.childPids: the agent reports at most 256 (kMaxChildPids).
inline constexpr size_t kMaxByeChildPids = 4096;

struct WireEvent {
  uint64_t ts_ns = 0;       // agent's CLOCK_MONOTONIC, below 2^63
  uint64_t addr = 0;        // kFork: the child's pid, 1..2^32-1; kStep: the step's number;
                            // kTraceSlice: its start (monotonic ns, below 2^63); kDeviceInfo:
                            // free bytes, at most size_bytes
  uint64_t size_bytes = 0;  // kTraceSlice: its end (monotonic ns, below 2^63); kDeviceInfo:
                            // total bytes, below 2^63 (a capacity is an int64 downstream);
                            // kPoolMalloc: the block's size, kPoolState: reserved bytes,
                            // kPoolPeaks: max reserved bytes (all below 2^63, as the
                            // allocated bytes of kPoolState and kPoolPeaks in addr)
  EventKind kind = EventKind::kMalloc;
  uint32_t string_id = 0;  // the agent instance's interned text; 0: none
  uint16_t device = 0;     // device kinds (is_device_kind): the CUDA ordinal; else 0
};

// Interned text of one agent instance (wire StringDef); ids are never 0.
struct WireString {
  uint32_t id = 0;
  std::string text;
};

// Longest interned text accepted (a deep Python or C stack is a few KiB).
inline constexpr size_t kMaxStringBytes = size_t{1} << 20;

// A loaded module's path: at most PATH_MAX. Its build-id: GNU ld writes 20 bytes (sha1),
// 16 (md5) or up to 32 (--build-id=0x...); more is not one.
inline constexpr size_t kMaxModulePathBytes = 4096;
inline constexpr size_t kMaxBuildIdBytes = 64;

struct WireThreadEvents {
  uint32_t thread_id = 0;
  std::vector<WireEvent> events;
};

// Hello.execedFrom: the Bye an instance that ended in exec() could not send.
struct WireExecedFrom {
  uint64_t instance_id = 0;
  uint64_t events_sent = 0;
  uint64_t dropped_total = 0;
  uint64_t instance_secret = 0;
};

struct WireHello {
  uint32_t ppid = 0;
  std::string hostname;
  std::vector<std::string> command_line;
  int32_t rank = -1;
  int32_t world_size = -1;
  uint64_t clock_monotonic_ns = 0;  // below 2^63
  uint64_t clock_realtime_ns = 0;   // below 2^63
  std::string agent_version;
  uint32_t forked_from_pid = 0;
  uint64_t trace_start_ns = 0;  // below 2^63; 0 when the agent did not say
  uint64_t memory_total_bytes = 0;
  // Events the instance handed to earlier connections (Hello.eventsSentBefore); none when
  // the agent did not say (an older agent).
  std::optional<uint64_t> events_sent_before;
  std::optional<WireExecedFrom> execed_from;  // this image replaced that one by exec()
};

struct WireBatch {
  std::vector<WireThreadEvents> threads;
  uint64_t dropped_so_far = 0;
  uint64_t watermark_ns = 0;  // below 2^63
  std::vector<WireString> strings;
  // Batch.modules: objects loaded since the previous batch. Each path absolute or "[vdso]",
  // start <= end.
  std::vector<LoadedModule> modules;
  std::optional<uint64_t> sent_before;  // Batch.sentBefore, when the agent says it
};

struct WireBye {
  uint64_t ts_ns = 0;  // below 2^63
  uint64_t dropped_total = 0;
  uint64_t events_sent = 0;
  std::vector<uint32_t> child_pids;
  ProcessEnd end = ProcessEnd::kUnknown;
  int32_t end_code = 0;
};

enum class WireBodyKind : uint8_t { kHello, kBatch, kBye };

// One wire::Message; only the body named by `body` is filled.
struct WireMessage {
  uint32_t pid = 0;
  uint64_t instance_id = 0;
  uint64_t instance_secret = 0;  // see wire.capnp's Message.instanceSecret
  uint64_t sequence = 0;
  bool reopened = false;  // see wire.capnp's Message.reopened
  WireBodyKind body = WireBodyKind::kHello;
  WireHello hello;
  WireBatch batch;
  WireBye bye;
};

// Why a message could not be decoded: a sender of another protocol version is told apart
// from bytes that are not a message at all (counted apart in memtap_meta).
enum class DecodeError : uint8_t { kNone, kMalformed, kProtocolVersion };

struct DecodeResult {
  bool ok = false;
  DecodeError why = DecodeError::kNone;  // when !ok
  std::string error;                     // names the field and what was expected
  WireMessage message;
};

// Decodes one (unpacked) wire::Message. Never throws.
DecodeResult decode_message(const void* data, size_t size);

}  // namespace memtap
