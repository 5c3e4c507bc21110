// Turns what the agent knows into wire::Message bytes (flat, unpacked) (common/wire.capnp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/sender/buffer_drain.h"
#include "agent/sender/sender_api.h"
#include "agent/sender/string_drain.h"

namespace memtap {

struct MessageHeader {
  uint32_t pid;
  uint64_t instance_id;
  uint64_t sequence;
};

std::string encode_hello(const MessageHeader& h, const MemtapSenderConfig& config,
                         uint64_t trace_start_ns);
// strings: the texts defined in this batch (Batch.strings), before any of its events.
std::string encode_batch(const MessageHeader& h, const DrainResult& drained,
                         const std::vector<StringText>& strings, uint64_t dropped_so_far,
                         uint64_t watermark_ns);
std::string encode_bye(const MessageHeader& h, uint64_t ts_ns, uint64_t dropped_total,
                       uint64_t events_sent, const std::vector<uint32_t>& child_pids);

}  // namespace memtap
