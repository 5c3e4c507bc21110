// The hot path: append one record to the calling thread's buffer.
//
// Fast case: a TLS load, two TLS stores around the write (below), a bounds check, a check
// that the event fits a narrow slot, an 8-byte store, the chain's end, a release store (a
// plain mov on x86), and a TLS load to see whether records wait. Everything else (first use
// by a thread, a full chunk, the byte bound, a compact or wide record, a record made inside
// another) is out of line.
//
// A signal handler that allocates may interrupt the thread in the middle of a record. It
// must not write at the position the interrupted record is about to fill (it would lose
// its record, or both, and could publish `committed` backwards under the sender). So while
// a record is written, the thread's tl_buffer points at g_buffer_busy, which looks full:
// a record begun inside another (a handler's) takes the slow path, which puts it aside in
// tl_deferred; the interrupted record, once published, writes what waits there after it.
// A handler runs to its end before the code it interrupted resumes, so whatever it put
// aside is complete by then. Signal fences, not atomics: the only other writer is the same
// thread.
#pragma once

#include <atomic>

#include "agent/event_buffer.h"

namespace memtap {

extern __thread ThreadBuffer* tl_buffer __attribute__((tls_model("initial-exec")));

// Stands in tl_buffer while the thread writes a record. Never registered, never written:
// its write_pos is past the end of any chunk.
extern ThreadBuffer g_buffer_busy;

// Records made while the thread was writing another (in a signal handler), to be written
// after it. More than kDeferredRecords at once (handlers that allocate a lot, or nested
// ones) are dropped and counted in BufferRegistry::dropped_deferred.
constexpr uint32_t kDeferredRecords = 16;
struct DeferredRecord {
  EventKind kind;
  uint64_t addr;
  uint64_t size_bytes;
  uint64_t ts_ns;
  uint64_t tag;
};
struct DeferredRecords {
  uint32_t count;  // may exceed kDeferredRecords: those past it were dropped
  DeferredRecord records[kDeferredRecords];
};
extern __thread DeferredRecords tl_deferred __attribute__((tls_model("initial-exec")));

// Marks the thread as writing a record and returns its buffer (null before its first
// record; g_buffer_busy inside another record).
inline ThreadBuffer* record_begin() {
  ThreadBuffer* b = tl_buffer;
  tl_buffer = &g_buffer_busy;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return b;
}

void record_deferred(BufferRegistry* reg, bool lossless);

// Ends what record_begin began: the thread's buffer back, then what handlers put aside.
inline void record_end(BufferRegistry* reg, bool lossless, ThreadBuffer* b) {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tl_buffer = b;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (__builtin_expect(tl_deferred.count != 0, 0)) record_deferred(reg, lossless);
}

// Ends a record written in the current chunk up to slot `end`: the chain moves to it (the
// next narrow record is relative to it), then the owner's position, then one release store
// of `committed` (a plain mov on x86) makes it the sender's to read.
inline void publish_record(ThreadBuffer* b, EventChunk* c, uint32_t end, uint64_t clock,
                           uint64_t addr) {
  b->write_chain = {clock, addr};
  b->write_pos = end;
  c->committed.store(end, std::memory_order_release);
}

// Out of line, between record_begin and record_end (it calls the latter): attaches the
// thread, moves to a new chunk, writes compact and wide records, puts a record made inside
// another aside. tag: wide_tag(string_id, device) (event_slot.h); 0 lets the record be
// packed narrower.
void record_slow(BufferRegistry* reg, bool lossless, ThreadBuffer* b, EventKind kind, uint64_t addr,
                 uint64_t size_bytes, uint64_t ts_ns, uint64_t tag);

inline void record_event(BufferRegistry* reg, bool lossless, EventKind kind, uint64_t addr,
                         uint64_t size_bytes, uint64_t ts_ns) {
  ThreadBuffer* b = record_begin();
  if (__builtin_expect(b != nullptr && b->write_pos < kChunkSlots, 1)) {
    const uint64_t slot = narrow_slot(kind, addr, size_bytes, ts_ns, b->write_chain);
    if (__builtin_expect(slot != 0, 1)) {
      EventChunk* c = b->write_chunk;
      uint32_t i = b->write_pos;
      c->slots[i] = slot;
      publish_record(b, c, i + 1, ts_ns, addr);
      record_end(reg, lossless, b);
      return;
    }
  }
  record_slow(reg, lossless, b, kind, addr, size_bytes, ts_ns, 0);
}

// A record that names interned text (context events, call stacks): always wide. Not on the
// allocation hot path.
inline void record_event_with_string(BufferRegistry* reg, bool lossless, EventKind kind,
                                     uint64_t addr, uint64_t size_bytes, uint64_t ts_ns,
                                     uint32_t string_id) {
  record_slow(reg, lossless, record_begin(), kind, addr, size_bytes, ts_ns, string_id);
}

// A device or pool event (wire.capnp deviceMalloc .. poolState): the device travels in the wide
// record's tag. Not on the host allocation path.
inline void record_device_event(BufferRegistry* reg, bool lossless, EventKind kind, uint16_t device,
                                uint64_t addr, uint64_t size_bytes, uint64_t ts_ns,
                                uint32_t string_id) {
  record_slow(reg, lossless, record_begin(), kind, addr, size_bytes, ts_ns,
              wide_tag(string_id, device));
}

// The thread's buffer: a free one claimed, or a new one registered. The caller makes it
// tl_buffer (record_end).
ThreadBuffer* buffer_attach(BufferRegistry* reg);

// From then on, a thread that exits retires its buffer (kBufferRetired), so that the sender
// frees it for the next thread as soon as it is drained, instead of after its liveness
// checks find the thread gone (~100 ms: threads that come and go faster than that filled
// the byte bound with buffers nobody wrote). Call once, early (the agent's constructor).
void buffer_retire_at_thread_exit();
bool buffer_next_chunk(BufferRegistry* reg, ThreadBuffer* b, bool lossless);

// In a fork() child: every buffer emptied, all but the calling thread's made free.
void registry_reset_after_fork(BufferRegistry* reg, uint32_t pid);

}  // namespace memtap
