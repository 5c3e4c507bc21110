// The hot path: append one record to the calling thread's buffer.
//
// Fast case: a TLS load, a bounds check, a check that the event fits a narrow slot, an
// 8-byte store, the chain's end, and a release store (a plain mov on x86). Everything else
// (first use by a thread, a full chunk, the byte bound, a compact or wide record) is in
// record_slow, out of line.
#pragma once

#include "agent/event_buffer.h"

namespace memtap {

extern __thread ThreadBuffer* tl_buffer __attribute__((tls_model("initial-exec")));

// Ends a record written in the current chunk up to slot `end`: the chain moves to it (the
// next narrow record is relative to it), then the owner's position, then one release store
// of `committed` (a plain mov on x86) makes it the sender's to read.
inline void publish_record(ThreadBuffer* b, EventChunk* c, uint32_t end, uint64_t clock,
                           uint64_t addr) {
  b->write_chain = {clock, addr};
  b->write_pos = end;
  c->committed.store(end, std::memory_order_release);
}

// Out of line: attaches the thread, moves to a new chunk, writes compact and wide records.
// tag: wide_tag(string_id, device) (event_slot.h); 0 lets the record be packed narrower.
void record_slow(BufferRegistry* reg, bool lossless, EventKind kind, uint64_t addr,
                 uint64_t size_bytes, uint64_t ts_ns, uint64_t tag);

inline void record_event(BufferRegistry* reg, bool lossless, EventKind kind, uint64_t addr,
                         uint64_t size_bytes, uint64_t ts_ns) {
  ThreadBuffer* b = tl_buffer;
  if (__builtin_expect(b != nullptr && b->write_pos < kChunkSlots, 1)) {
    const uint64_t slot = narrow_slot(kind, addr, size_bytes, ts_ns, b->write_chain);
    if (__builtin_expect(slot != 0, 1)) {
      EventChunk* c = b->write_chunk;
      uint32_t i = b->write_pos;
      c->slots[i] = slot;
      publish_record(b, c, i + 1, ts_ns, addr);
      return;
    }
  }
  record_slow(reg, lossless, kind, addr, size_bytes, ts_ns, 0);
}

// A record that names interned text (context events, call stacks): always wide. Not on the
// allocation hot path.
inline void record_event_with_string(BufferRegistry* reg, bool lossless, EventKind kind,
                                     uint64_t addr, uint64_t size_bytes, uint64_t ts_ns,
                                     uint32_t string_id) {
  record_slow(reg, lossless, kind, addr, size_bytes, ts_ns, string_id);
}

// A device event (wire.capnp deviceMalloc .. deviceStream): the device travels in the wide
// record's tag. Not on the host allocation path.
inline void record_device_event(BufferRegistry* reg, bool lossless, EventKind kind, uint16_t device,
                                uint64_t addr, uint64_t size_bytes, uint64_t ts_ns,
                                uint32_t string_id) {
  record_slow(reg, lossless, kind, addr, size_bytes, ts_ns, wide_tag(string_id, device));
}

ThreadBuffer* buffer_attach(BufferRegistry* reg);
bool buffer_next_chunk(BufferRegistry* reg, ThreadBuffer* b, bool lossless);

// In a fork() child: every buffer emptied, all but the calling thread's made free.
void registry_reset_after_fork(BufferRegistry* reg, uint32_t pid);

}  // namespace memtap
