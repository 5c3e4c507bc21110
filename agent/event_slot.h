// How a record lies in the per-thread buffers: 8 bytes for most allocation events.
//
// The hooks used to store the 32-byte EventRecord, then 16 bytes. In an allocation storm a
// thread writes tens of megabytes of records a second, and that memory, not the hook's
// instructions, was most of memtap's cost: the kernel populating fresh chunks (0.5-1 ns a
// byte on our VMs), and the application's own allocator running beside a stream of cache
// lines it never reads. So a record is packed into as few 8-byte slots as it can be, and the
// sender unpacks it into an EventRecord.
//
// A buffer is one chain of records. Each record sets the chain's clock and address to its
// own, and a narrow record stores only its distance from the record before it; the owner
// and the sender each keep the chain's end (ThreadBuffer::write_chain, read_chain). A
// malloc or free seldom lies far in time or address from the thread's previous event.
//
// Narrow, one slot (kMalloc or kFree, no text, close to the previous record):
//   bit 0 = 1, bit 1 = kind (0 malloc, 1 free), bits 2-21: clock ticks since the previous
//   record (< 2^20, about 0.3 ms at 3 GHz);
//   malloc: bits 22-37 size_bytes (< 64 KiB), bits 38-63 address - previous address
//           (signed, within 32 MiB);
//   free:   bits 22-63 address - previous address (signed, within 2 TiB); size 0.
// Compact, two slots (any kind; no text; addr < 2^48; size_bytes < 2^25):
//   s0 = clock's low 48 bits << 16 | size_bytes >> 16 << 7 | kind << 2 | 0b00
//   s1 = addr | (size_bytes & 0xffff) << 48
// Wide, four slots (everything else: a string_id or device, a large size, a high address):
//   s0 = clock's low 48 bits << 16 | kind << 2 | 0b10,  s1 = string_id | device << 32,
//   s2 = addr,  s3 = size_bytes
// A record never straddles two chunks: when too few slots are left, the owner moves on and
// those slots stay unpublished. The chain runs on across chunks.
//
// The clock keeps its low 48 bits only: the sender reads the clock after draining and puts
// back the high bits from that reading (unwrap_clock). That is exact while a record is read
// less than 2^47 ticks after it was written: 9.7 hours at 4 GHz; the sender drains every
// few milliseconds.
//
// Compiled into both the agent and the sender (see event_buffer.h): plain functions on
// plain data.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/event_record.h"

namespace memtap {

constexpr uint64_t kSlotClockBits = 48;
constexpr uint64_t kSlotClockMask = (uint64_t{1} << kSlotClockBits) - 1;
constexpr unsigned kCompactSizeBits = 25;  // 32 MiB; larger blocks take a wide record
constexpr unsigned kCompactAddrBits = 48;  // x86-64 and AArch64 user space
static_assert(uint32_t(EventKind::kPoolPeaks) < 32, "a kind has 5 bits in a slot");

constexpr unsigned kNarrowClockBits = 20;
constexpr unsigned kNarrowSizeBits = 16;
constexpr unsigned kNarrowMallocAddrBits = 26;  // signed
constexpr unsigned kNarrowFreeAddrBits = 42;    // signed

constexpr uint32_t kCompactSlots = 2;
constexpr uint32_t kWideSlots = 4;

// Where a buffer's chain of records stands: the last record's clock and address.
struct SlotChain {
  uint64_t clock;
  uint64_t addr;
};

// The narrow slot for the event, or 0 when it takes more (a narrow slot is never 0: bit 0
// is set). A handful of integer operations; the hooks call it with a constant kind.
inline uint64_t narrow_slot(EventKind kind, uint64_t addr, uint64_t size_bytes, uint64_t clock,
                            const SlotChain& chain) {
  const uint64_t dt = clock - chain.clock;
  const uint64_t da = addr - chain.addr;
  if (kind == EventKind::kMalloc) {
    constexpr uint64_t half = uint64_t{1} << (kNarrowMallocAddrBits - 1);
    if (((dt >> kNarrowClockBits) | ((da + half) >> kNarrowMallocAddrBits) |
         (size_bytes >> kNarrowSizeBits)) != 0) {
      return 0;
    }
    return 1 | dt << 2 | size_bytes << 22 | da << 38;
  }
  if (kind == EventKind::kFree) {
    constexpr uint64_t half = uint64_t{1} << (kNarrowFreeAddrBits - 1);
    if (((dt >> kNarrowClockBits) | ((da + half) >> kNarrowFreeAddrBits) | size_bytes) != 0) {
      return 0;
    }
    return 3 | dt << 2 | da << 22;
  }
  return 0;
}

// Whether the event fits a compact record (two slots).
inline bool fits_compact(uint64_t addr, uint64_t size_bytes) {
  return ((addr >> kCompactAddrBits) | (size_bytes >> kCompactSizeBits)) == 0;
}

inline void pack_compact(uint64_t* s, EventKind kind, uint64_t addr, uint64_t size_bytes,
                         uint64_t clock) {
  s[0] = (clock << 16) | ((size_bytes >> 16) << 7) | (uint64_t(kind) << 2);
  s[1] = addr | (size_bytes << 48);
}

// A wide record's second slot: what only it can carry. A record whose tag is 0 may be
// packed narrower (device 0 is what an unpacked record says anyway).
inline uint64_t wide_tag(uint32_t string_id, uint16_t device) {
  return string_id | uint64_t{device} << 32;
}

inline void pack_wide(uint64_t* s, EventKind kind, uint64_t addr, uint64_t size_bytes,
                      uint64_t clock, uint64_t tag) {
  s[0] = (clock << 16) | (uint64_t(kind) << 2) | 2;
  s[1] = tag;
  s[2] = addr;
  s[3] = size_bytes;
}

// Unpacks the record that starts at s and moves the chain to it; returns its slots. ts_ns
// holds the clock's low 48 bits until unwrap_clock. Built as EventRecord's four words: set
// field by field, the compiler assembled the record on the stack with narrow stores and
// read it back with one wide load, a store-forwarding stall that was a third of the sender
// thread's time.
inline uint32_t unpack_record(const uint64_t* s, SlotChain* chain, EventRecord* out) {
  const uint64_t s0 = s[0];
  uint64_t words[4];
  uint32_t slots;
  if (s0 & 1) {
    const bool is_free = (s0 & 2) != 0;
    const int64_t da = is_free ? int64_t(s0) >> 22 : int64_t(s0) >> 38;
    const uint64_t dt = (s0 >> 2) & ((uint64_t{1} << kNarrowClockBits) - 1);
    words[0] = (chain->clock + dt) & kSlotClockMask;
    words[1] = is_free ? uint64_t(EventKind::kFree) : uint64_t(EventKind::kMalloc);
    words[2] = chain->addr + uint64_t(da);
    words[3] = is_free ? 0 : (s0 >> 22) & ((uint64_t{1} << kNarrowSizeBits) - 1);
    slots = 1;
  } else {
    const uint64_t kind = (s0 >> 2) & 31;
    words[0] = s0 >> 16;
    if (s0 & 2) {
      words[1] = kind | ((s[1] >> 32) & 0xffff) << 16 | (uint64_t(uint32_t(s[1])) << 32);
      words[2] = s[2];
      words[3] = s[3];
      slots = kWideSlots;
    } else {
      words[1] = kind;
      words[2] = s[1] & ((uint64_t{1} << kCompactAddrBits) - 1);
      words[3] = ((s0 >> 7) & 511) << 16 | s[1] >> 48;
      slots = kCompactSlots;
    }
  }
  chain->clock = words[0];
  chain->addr = words[2];
  memcpy(out, words, sizeof *out);
  return slots;
}

// The full clock reading whose low 48 bits are `low`, nearest to `now` (a reading taken
// after the record was written; a record a little newer than `now` also comes out right).
inline uint64_t unwrap_clock(uint64_t now, uint64_t low) {
  uint64_t behind = (now - low) & kSlotClockMask;  // how far low lies before now, mod 2^48
  // More than half the range behind means it is in fact a little ahead of now.
  if (behind >= (uint64_t{1} << (kSlotClockBits - 1))) return now + (kSlotClockMask + 1 - behind);
  return now - behind;
}

}  // namespace memtap
