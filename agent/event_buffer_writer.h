// The hot path: append one record to the calling thread's buffer.
//
// Fast case: a TLS load, a bounds check, a 32-byte store and a release store (a plain
// mov on x86). Everything else (first use by a thread, a full chunk, the byte bound) is
// in record_slow, out of line.
#pragma once

#include "agent/event_buffer.h"

namespace memtap {

extern __thread ThreadBuffer* tl_buffer __attribute__((tls_model("initial-exec")));

inline void write_record(ThreadBuffer* b, EventKind kind, uint64_t addr, uint64_t size_bytes,
                         uint64_t ts_ns, uint32_t string_id = 0) {
  EventChunk* c = b->write_chunk;
  uint32_t i = b->write_pos;
  EventRecord& r = c->events[i];
  r.ts_ns = ts_ns;
  r.addr = addr;
  r.size_bytes = size_bytes;
  r.kind = uint16_t(kind);
  r.unused = 0;
  r.string_id = string_id;
  b->write_pos = i + 1;
  c->committed.store(i + 1, std::memory_order_release);
}

void record_slow(BufferRegistry* reg, bool lossless, EventKind kind, uint64_t addr,
                 uint64_t size_bytes, uint64_t ts_ns);

inline void record_event(BufferRegistry* reg, bool lossless, EventKind kind, uint64_t addr,
                         uint64_t size_bytes, uint64_t ts_ns) {
  ThreadBuffer* b = tl_buffer;
  if (__builtin_expect(b != nullptr && b->write_pos < kChunkEvents, 1)) {
    write_record(b, kind, addr, size_bytes, ts_ns);
    return;
  }
  record_slow(reg, lossless, kind, addr, size_bytes, ts_ns);
}

ThreadBuffer* buffer_attach(BufferRegistry* reg);
bool buffer_next_chunk(BufferRegistry* reg, ThreadBuffer* b, bool lossless);

// A record that names interned text (context events, call stacks): record_event with a
// string_id. Not on the allocation hot path, so its slow case is inline here.
inline void record_event_with_string(BufferRegistry* reg, bool lossless, EventKind kind,
                                     uint64_t addr, uint64_t size_bytes, uint64_t ts_ns,
                                     uint32_t string_id) {
  ThreadBuffer* b = tl_buffer;
  if (__builtin_expect(b == nullptr, 0)) {
    b = buffer_attach(reg);
    if (!b) {
      reg->dropped_no_buffer.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  if (b->write_pos == kChunkEvents && !buffer_next_chunk(reg, b, lossless)) {
    b->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  write_record(b, kind, addr, size_bytes, ts_ns, string_id);
}
// In a fork() child: every buffer emptied, all but the calling thread's made free.
void registry_reset_after_fork(BufferRegistry* reg, uint32_t pid);

}  // namespace memtap
