// The fixed-size record that the agent's hooks write into per-thread buffers.
//
// It is the in-process form of wire.capnp's Event: the hook path writes 32 bytes and
// returns; the sender thread turns records into Cap'n Proto. Kinds keep the same numbers
// as wire::EventKind so the sender copies them without a table (checked in the sender).
#pragma once

#include <cstdint>

namespace memtap {

enum class EventKind : uint32_t {
  kMalloc = 0,
  kFree = 1,
  kMmap = 2,
  kMunmap = 3,
  kFork = 4,       // addr: the child's pid
  kRssSample = 5,  // size_bytes: resident set; written by the sender, not by hooks
};

struct EventRecord {
  uint64_t ts_ns;  // CLOCK_MONOTONIC
  uint64_t addr;
  uint64_t size_bytes;
  uint32_t kind;  // EventKind
  uint32_t reserved;
};
static_assert(sizeof(EventRecord) == 32, "one record is half a cache line");

}  // namespace memtap
