// How a record lies in the per-thread buffers: 16 bytes for nearly every event.
//
// The hooks used to store the 32-byte EventRecord. In an allocation storm a thread writes
// tens of megabytes of records a second, and that memory, not the hook's instructions, was
// most of memtap's cost: the kernel populating fresh chunks, and the application's own
// allocator running beside a stream of cache lines it never reads. So a record is packed
// into one 16-byte slot when it can be, and the sender unpacks it into an EventRecord.
//
// Compact, one slot (any kind; no text; addr < 2^48; size_bytes < 2^26):
//   w0 = clock's low 48 bits << 16 | size_bytes >> 16 << 6 | kind << 1 | 0
//   w1 = addr | (size_bytes & 0xffff) << 48
// Wide, two slots (everything else: a string_id, a large size, a high address):
//   slot 0: w0 = clock's low 48 bits << 16 | kind << 1 | 1,  w1 = string_id
//   slot 1: w0 = addr,                                        w1 = size_bytes
// A wide record never straddles two chunks: when one slot is left, the owner moves on and
// the slot stays unpublished.
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

struct EventSlot {
  uint64_t w0;
  uint64_t w1;
};
static_assert(sizeof(EventSlot) == 16, "four records to a cache line");

constexpr uint64_t kSlotClockBits = 48;
constexpr uint64_t kSlotClockMask = (uint64_t{1} << kSlotClockBits) - 1;
constexpr unsigned kCompactSizeBits = 26;  // 64 MiB; larger blocks take a wide record
constexpr unsigned kCompactAddrBits = 48;  // x86-64 and AArch64 user space
constexpr uint64_t kWideFlag = 1;
static_assert(uint32_t(EventKind::kTraceSlice) < 32, "a kind has 5 bits in a slot");

// Whether the event fits one slot. One OR and one test on the hot path.
inline bool fits_one_slot(uint64_t addr, uint64_t size_bytes) {
  return ((addr >> kCompactAddrBits) | (size_bytes >> kCompactSizeBits)) == 0;
}

inline void pack_compact(EventSlot* s, EventKind kind, uint64_t addr, uint64_t size_bytes,
                         uint64_t clock) {
  s->w0 = (clock << 16) | ((size_bytes >> 16) << 6) | (uint64_t(kind) << 1);
  s->w1 = addr | (size_bytes << 48);
}

inline void pack_wide(EventSlot* s, EventKind kind, uint64_t addr, uint64_t size_bytes,
                      uint64_t clock, uint32_t string_id) {
  s[0].w0 = (clock << 16) | (uint64_t(kind) << 1) | kWideFlag;
  s[0].w1 = string_id;
  s[1].w0 = addr;
  s[1].w1 = size_bytes;
}

inline bool slot_is_wide(const EventSlot& s) {
  return (s.w0 & kWideFlag) != 0;
}

// Unpacks the record that starts at s (two slots if it is wide). ts_ns holds the clock's
// low 48 bits until unwrap_clock. Built as EventRecord's four words: set field by field, the
// compiler assembled the record on the stack with narrow stores and read it back with one
// wide load, a store-forwarding stall that was a third of the sender thread's time.
inline EventRecord unpack_slot(const EventSlot* s) {
  const uint64_t w0 = s[0].w0;
  const uint64_t kind = (w0 >> 1) & 31;
  uint64_t words[4];
  words[0] = w0 >> 16;
  if (w0 & kWideFlag) {
    words[1] = kind | (uint64_t(uint32_t(s[0].w1)) << 32);
    words[2] = s[1].w0;
    words[3] = s[1].w1;
  } else {
    words[1] = kind;
    words[2] = s[0].w1 & ((uint64_t{1} << kCompactAddrBits) - 1);
    words[3] = ((w0 >> 6) & 1023) << 16 | s[0].w1 >> 48;
  }
  EventRecord r;
  memcpy(&r, words, sizeof r);
  return r;
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
