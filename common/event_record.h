// One event as the sender sees it, unpacked from the per-thread buffers.
//
// It is the in-process form of wire.capnp's Event: the hooks pack it into 8 bytes where
// they can (agent/event_slot.h), the sender unpacks it into this form and turns records into
// Cap'n Proto. Kinds keep the same numbers as wire::EventKind so the sender copies them
// without a table (checked in the sender).
// The fields lie where Cap'n Proto puts Event's in a message (tsNs in word 0, kind in the
// low 16 bits of word 1 and stringId in its high 32, addr, sizeBytes), so that the sender
// copies a thread's records into a batch as they are; it checks that at run time and sets
// the fields one by one if a schema change ever moves them (agent/sender/wire_encoder).
#pragma once

#include <cstddef>
#include <cstdint>

namespace memtap {

enum class EventKind : uint32_t {
  kMalloc = 0,
  kFree = 1,
  kMmap = 2,
  kMunmap = 3,
  kFork = 4,       // addr: the child's pid
  kRssSample = 5,  // size_bytes: resident set; written by the sender, not by hooks
  // Context events (agent/memtap.h); string_id names interned text (wire.capnp).
  kStep = 6,  // addr: the step's number
  kMark = 7,
  kRangeStart = 8,
  kRangeEnd = 9,
  kOwnerPush = 10,
  kOwnerPop = 11,
  kOpStart = 12,
  kOpEnd = 13,
  kPythonStack = 14,  // the stack of this thread's next malloc / mmap record
  kCStack = 15,
  kTraceSlice = 16,  // addr, size_bytes: start and end, CLOCK_MONOTONIC ns
  // Device events (wire.capnp deviceMalloc .. deviceStream): `device` is the CUDA ordinal.
  kDeviceMalloc = 17,  // string_id: the allocating API
  kDeviceFree = 18,
  kPinnedMalloc = 19,  // string_id: the allocating API
  kPinnedFree = 20,
  kKernelLaunch = 21,  // string_id: the kernel's name; addr: the stream
  kDeviceOom = 22,     // size_bytes: requested; string_id: the API; addr: the stream
  kDeviceInfo = 23,    // addr: free bytes, size_bytes: total bytes
  kDeviceStream = 24,  // addr: the stream of this thread's next device or pool event
  // The framework pool, layer PTA (wire.capnp poolMalloc .. poolPeaks; memtap_pool_* in
  // agent/memtap.h): `device` is the CUDA ordinal the pool serves.
  kPoolMalloc = 25,         // addr, size_bytes: the block
  kPoolFree = 26,           // addr: the block whose free was requested
  kPoolFreeCompleted = 27,  // addr: the block the pool took back
  kPoolState = 28,          // addr: allocated bytes, size_bytes: reserved bytes
  kPoolPeaks = 29,          // addr: max allocated bytes, size_bytes: max reserved bytes
};

// The kinds whose records carry a device.
constexpr bool is_device_kind(EventKind kind) {
  return kind >= EventKind::kDeviceMalloc && kind <= EventKind::kPoolPeaks;
}

struct EventRecord {
  uint64_t ts_ns;      // CLOCK_MONOTONIC (raw TSC ticks until the sender converts them)
  uint16_t kind;       // EventKind
  uint16_t device;     // device events: the CUDA device ordinal; else 0
  uint32_t string_id;  // interned text (0: none); see wire.capnp Event.stringId
  uint64_t addr;
  uint64_t size_bytes;
};
static_assert(sizeof(EventRecord) == 32, "wire::Event's data section");
static_assert(offsetof(EventRecord, kind) == 8 && offsetof(EventRecord, device) == 10 &&
                  offsetof(EventRecord, string_id) == 12 && offsetof(EventRecord, addr) == 16 &&
                  offsetof(EventRecord, size_bytes) == 24,
              "four words: ts_ns, kind | device << 16 | string_id << 32, addr, size_bytes");

}  // namespace memtap
