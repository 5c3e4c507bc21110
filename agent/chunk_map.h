// Mapping a fresh event chunk against the registry's byte bound: done by a traced thread
// whose chunk is full and has no spare (agent/event_buffer.cpp), and ahead of time by the
// sender for threads that are moving through chunks (agent/sender/buffer_drain.cpp).
#pragma once

#include "agent/event_buffer.h"
#include "agent/raw_syscalls.h"

namespace memtap {

// A zeroed chunk (committed = 0, next = nullptr), or nullptr when the bound is reached or
// the kernel refuses. Populated up front: one syscall instead of 128 page faults.
inline EventChunk* map_chunk(BufferRegistry* reg) {
  const uint64_t used = reg->chunk_bytes.fetch_add(sizeof(EventChunk), std::memory_order_relaxed);
  if (used + sizeof(EventChunk) > reg->byte_limit) {
    reg->chunk_bytes.fetch_sub(sizeof(EventChunk), std::memory_order_relaxed);
    return nullptr;
  }
  auto* c = static_cast<EventChunk*>(raw_mmap_anon(sizeof(EventChunk), MAP_POPULATE));
  if (!c) reg->chunk_bytes.fetch_sub(sizeof(EventChunk), std::memory_order_relaxed);
  return c;
}

}  // namespace memtap
