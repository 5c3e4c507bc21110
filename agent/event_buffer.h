// Per-thread event buffers: the only memory the hot path writes.
//
// Each traced thread owns one ThreadBuffer: a chain of fixed-size chunks that only that
// thread writes (single producer) and only the sender thread reads (single consumer). A
// record is written in place (one, two or four 8-byte slots, agent/event_slot.h) and
// published with one release store of `committed`; no lock, no syscall, no allocation
// through the hooked allocator (chunks come from raw mmap, and rarely: one per kChunkSlots
// slots).
//
// This header is compiled into both the preloaded agent and the sender library, which
// runs in its own link namespace (dlmopen). Both see the same bytes: the layout here is
// the interface between them, so it holds only plain data and lock-free atomics.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "agent/event_slot.h"

namespace memtap {

constexpr uint32_t kChunkSlots = 65536;  // 512 KiB of records per chunk
constexpr uint32_t kSpareChunks = 4;

struct EventChunk {
  std::atomic<uint32_t> committed;  // slots published by the owner (release)
  // Set (release) by the owner once it writes no more here, after its last `committed`:
  // a record that did not fit may leave the last slots unpublished.
  std::atomic<EventChunk*> next;
  uint64_t slots[kChunkSlots];
};

enum BufferState : uint32_t {
  kBufferFree = 0,      // no owner; may be claimed by a new thread
  kBufferClaiming = 1,  // a thread is taking it; the sender skips it
  kBufferOwned = 2,     // a live (or not yet known dead) thread writes here
  kBufferRetired = 3,   // its thread has exited; the sender frees it once drained
};

// The owner's fields and the sender's lie on separate cache lines: the sender moves its
// read position while the owner writes, and the hot path should not lose its line to that.
struct ThreadBuffer {
  // Owner thread only.
  EventChunk* write_chunk;
  uint32_t write_pos;
  SlotChain write_chain;  // the last record written (agent/event_slot.h)
  // The sender's cycle clock when this thread attached: a record of the thread stamped
  // before it (taken before the attach, as a pool event's block record shares its stream
  // record's time) is stamped this, as the first record was (write_record).
  uint64_t attach_floor;
  // Sender thread only.
  alignas(64) EventChunk* read_chunk;
  uint32_t read_pos;
  SlotChain read_chain;  // the last record read, its clock's low 48 bits
  uint64_t idle_cycles;  // drain cycles without events, to check liveness only now and then
  // Shared.
  std::atomic<uint32_t> state;
  std::atomic<uint32_t> tid;
  std::atomic<uint64_t> dropped;  // records lost here because the byte bound was hit
  // Chunks the owner has moved past that the sender has not read to their end yet: the
  // owner adds one when it moves on, the sender takes one off when it follows. At 0 the
  // chain is the current chunk alone, so no spare can come back to it (lossless waits
  // would never end).
  std::atomic<uint32_t> chunks_behind;
  // Drained chunks the sender hands back for reuse, so that a busy thread rarely maps a
  // new one. Each slot: only the sender fills it (null -> chunk), only the owner empties it.
  std::atomic<EventChunk*> spare[kSpareChunks];
  ThreadBuffer* next_registered;  // immutable once published in the registry
};

constexpr uint32_t kMaxChildPids = 256;

// Process-wide registry of buffers. Lives in the agent (one per process); the sender
// gets a pointer to it.
// Constant-initialised (no constructor runs), so hooks called before the agent's own
// constructor, by libc start-up or other libraries' constructors, already have buffers.
struct BufferRegistry {
  std::atomic<ThreadBuffer*> head{nullptr};
  std::atomic<uint64_t> chunk_bytes{0};        // bytes in chunks now, against byte_limit
  uint64_t byte_limit = 256ull << 20;          // MEMTAP_BUFFER_MB
  std::atomic<uint64_t> dropped_no_buffer{0};  // records lost before a thread had a buffer
  // Records a signal handler made while its thread was writing one, past those that can
  // wait (agent/event_buffer_writer.h).
  std::atomic<uint64_t> dropped_deferred{0};
  std::atomic<uint32_t> child_count{0};  // fork() children, for Bye
  uint32_t child_pids[kMaxChildPids] = {};
  uint32_t pid = 0;
  // When the sender's newest drain cycle began, in the records' clock (TSC or ns): a thread's
  // first record, timestamped before its buffer was attached, is stamped no earlier (see
  // write_record). The sender tells the monitor nothing older than its previous cycle's
  // start will come; attaching a buffer (claiming one, or mapping a chunk) among 64 new
  // threads on two cores took up to 7 ms, and those first records came late.
  std::atomic<uint64_t> sender_cycle_clock{0};
};

}  // namespace memtap
