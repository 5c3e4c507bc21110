// The consumer side of the per-thread buffers (runs on the sender thread only).
#pragma once

#include <cstdint>
#include <vector>

#include "agent/event_buffer.h"

namespace memtap {

struct DrainedThread {
  uint32_t tid = 0;
  size_t first = 0;  // index into DrainResult::records
  size_t count = 0;
};

struct DrainResult {
  std::vector<EventRecord> records;
  std::vector<DrainedThread> threads;
  void clear() {
    records.clear();
    threads.clear();
  }
};

// Moves up to max_records published records out of the buffers into out, recycling
// chunks that are fully read. Returns the number moved.
size_t drain_buffers(BufferRegistry* reg, size_t max_records, DrainResult* out);

// The oldest clock (unwrapped against `now_clock`, a reading of the same clock taken after
// the last drain) of the records published and not yet read, over every buffer; false when
// none waits. Each buffer is read in order and its clocks never go back, so its first unread
// record is its oldest: a batch cut short (kMaxRecordsPerBatch, or ZeroMQ taking no more)
// can still promise the monitor that nothing older than this is left.
bool oldest_unread_clock(BufferRegistry* reg, uint64_t now_clock, uint64_t* clock);

// The slots published and not yet read, over every buffer: how much a drain would take
// now, for the hold rule (drain_hold.h). Counts a chunk the owner moved past as full, so it
// may be over by the few slots a record that did not fit left at a chunk's end.
uint64_t unread_slots(BufferRegistry* reg);

// Records lost in the agent so far (byte bound hit, or no buffer for a thread).
uint64_t dropped_records(const BufferRegistry* reg);

// Frees buffers whose thread has exited and whose records are all read. Cheap enough to
// call every cycle: a thread is checked only after it has been idle for a while.
void reclaim_dead_buffers(BufferRegistry* reg);

}  // namespace memtap
