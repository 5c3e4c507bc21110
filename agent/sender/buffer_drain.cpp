// Reading the per-thread buffers; see event_buffer.h for the protocol.
#include "agent/sender/buffer_drain.h"

#include <algorithm>

#include "agent/raw_syscalls.h"

namespace memtap {

namespace {

constexpr uint64_t kIdleCyclesBeforeLivenessCheck = 20;

// The buffers the sender reads: a thread's own, and one whose thread has exited with
// records still in it.
bool being_read(uint32_t state) {
  return state == kBufferOwned || state == kBufferRetired;
}

void recycle_chunk(BufferRegistry* reg, ThreadBuffer* b, EventChunk* c) {
  // Only the owner empties a spare slot and only we fill it, so a null we see stays null
  // until we store.
  for (auto& slot : b->spare) {
    if (slot.load(std::memory_order_acquire) == nullptr) {
      slot.store(c, std::memory_order_release);
      return;
    }
  }
  raw_munmap(c, sizeof(EventChunk));
  reg->chunk_bytes.fetch_sub(sizeof(EventChunk), std::memory_order_relaxed);
}

// Records of one buffer, up to max, unpacked (their clocks still 48 bits: see
// unwrap_clock); advances the read position.
size_t drain_one(BufferRegistry* reg, ThreadBuffer* b, size_t max, std::vector<EventRecord>* out) {
  size_t moved = 0;
  while (moved < max) {
    EventChunk* c = b->read_chunk;
    uint32_t committed = c->committed.load(std::memory_order_acquire);
    if (b->read_pos < committed) {
      // The owner publishes a record's slots at once, so one never lies across
      // `committed`.
      uint32_t i = b->read_pos;
      while (i < committed && moved < max) {
        EventRecord r;
        i += unpack_record(&c->slots[i], &b->read_chain, &r);
        out->push_back(r);
        ++moved;
      }
      b->read_pos = i;
      continue;
    }
    EventChunk* next = c->next.load(std::memory_order_acquire);
    if (!next) break;  // nothing more published yet, and the owner has not moved on
    // The owner's last `committed` came before `next`: if it published more in between,
    // read that first.
    if (c->committed.load(std::memory_order_acquire) != b->read_pos) continue;
    b->read_chunk = next;
    b->read_pos = 0;
    recycle_chunk(reg, b, c);
    b->chunks_behind.fetch_sub(1, std::memory_order_release);
  }
  return moved;
}

// Whether the sender has read everything of a buffer whose owner is gone: its read position
// at the last published slot of a chunk the owner never moved on from. Only then may the
// buffer be given to another thread.
bool read_to_the_end(ThreadBuffer* b) {
  EventChunk* c = b->read_chunk;
  return b->read_pos == c->committed.load(std::memory_order_acquire) &&
         c->next.load(std::memory_order_acquire) == nullptr;
}

}  // namespace

size_t drain_buffers(BufferRegistry* reg, size_t max_records, DrainResult* out) {
  size_t total = 0;
  for (ThreadBuffer* b = reg->head.load(std::memory_order_acquire); b && total < max_records;
       b = b->next_registered) {
    const uint32_t state = b->state.load(std::memory_order_acquire);
    if (!being_read(state)) continue;
    size_t first = out->records.size();
    size_t n = drain_one(reg, b, max_records - total, &out->records);
    // Its thread has exited: nothing more comes, and once read to the end it is the next
    // thread's.
    if (state == kBufferRetired && read_to_the_end(b)) {
      b->state.store(kBufferFree, std::memory_order_release);
    }
    if (n == 0) {
      ++b->idle_cycles;
      continue;
    }
    b->idle_cycles = 0;
    out->threads.push_back({b->tid.load(std::memory_order_relaxed), first, n});
    total += n;
  }
  return total;
}

bool oldest_unread_clock(BufferRegistry* reg, uint64_t now_clock, uint64_t* clock) {
  bool found = false;
  for (ThreadBuffer* b = reg->head.load(std::memory_order_acquire); b; b = b->next_registered) {
    const uint32_t state = b->state.load(std::memory_order_acquire);
    if (!being_read(state)) continue;
    // drain_one's walk, without moving: the first published record past the read position.
    EventChunk* c = b->read_chunk;
    uint32_t pos = b->read_pos;
    for (;;) {
      if (pos < c->committed.load(std::memory_order_acquire)) {
        SlotChain chain = b->read_chain;
        EventRecord r;
        unpack_record(&c->slots[pos], &chain, &r);
        const uint64_t unwrapped = unwrap_clock(now_clock, r.ts_ns);
        if (!found || unwrapped < *clock) *clock = unwrapped;
        found = true;
        break;
      }
      EventChunk* next = c->next.load(std::memory_order_acquire);
      if (!next) break;
      if (c->committed.load(std::memory_order_acquire) != pos) continue;
      c = next;
      pos = 0;
    }
  }
  return found;
}

uint64_t unread_slots(BufferRegistry* reg) {
  uint64_t sum = 0;
  for (ThreadBuffer* b = reg->head.load(std::memory_order_acquire); b; b = b->next_registered) {
    const uint32_t state = b->state.load(std::memory_order_acquire);
    if (!being_read(state)) continue;
    const uint32_t behind = b->chunks_behind.load(std::memory_order_acquire);
    if (behind != 0) {
      // The read chunk's rest and the chunks after it; the write chunk's part is left out.
      sum += uint64_t(behind) * kChunkSlots - b->read_pos;
    } else {
      const uint32_t committed = b->read_chunk->committed.load(std::memory_order_acquire);
      if (committed > b->read_pos) sum += committed - b->read_pos;
    }
  }
  return sum;
}

uint64_t dropped_records(const BufferRegistry* reg) {
  uint64_t sum = reg->dropped_no_buffer.load(std::memory_order_relaxed) +
                 reg->dropped_deferred.load(std::memory_order_relaxed);
  for (ThreadBuffer* b = reg->head.load(std::memory_order_acquire); b; b = b->next_registered) {
    sum += b->dropped.load(std::memory_order_relaxed);
  }
  return sum;
}

void reclaim_dead_buffers(BufferRegistry* reg) {
  for (ThreadBuffer* b = reg->head.load(std::memory_order_acquire); b; b = b->next_registered) {
    if (b->state.load(std::memory_order_acquire) != kBufferOwned) continue;
    if (b->idle_cycles < kIdleCyclesBeforeLivenessCheck) continue;
    b->idle_cycles = 0;
    if (raw_thread_alive(reg->pid, b->tid.load(std::memory_order_relaxed))) continue;
    // The thread is gone, so nothing can be published after this read.
    if (read_to_the_end(b)) b->state.store(kBufferFree, std::memory_order_release);
  }
}

}  // namespace memtap
