// The owner side of the per-thread buffers, off the hot path: attaching a thread,
// moving to a new chunk, and resetting after fork(). See event_buffer.h.
#include <pthread.h>

#include <algorithm>

#include "agent/alt_stack.h"
#include "agent/event_buffer_writer.h"
#include "agent/raw_syscalls.h"

namespace memtap {

// The thread's buffer. initial-exec TLS: the agent is preloaded, so its TLS is static and
// reading it is one instruction, with no allocation on first use.
__thread ThreadBuffer* tl_buffer __attribute__((tls_model("initial-exec"))) = nullptr;

// Process-wide because tl_buffer must point at something that looks full from any thread;
// nothing writes it. Constant-initialised, like the registry.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // the rest zero, as meant
ThreadBuffer g_buffer_busy = {.write_chunk = nullptr, .write_pos = UINT32_MAX};
#pragma GCC diagnostic pop

__thread DeferredRecords tl_deferred __attribute__((tls_model("initial-exec"))) = {};

namespace {

// The key whose destructor runs when a thread that has a buffer exits. Process-wide because
// thread exit is: pthread keys are the one hook libc gives for it without wrapping
// pthread_create.
pthread_key_t g_buffer_key;
std::atomic<bool> g_buffer_key_ready{false};

void retire_buffer(void* p) {
  auto* b = static_cast<ThreadBuffer*>(p);
  // A later record on this thread (another key's destructor freeing memory) attaches a
  // buffer again, and sets the key again: libc then runs this destructor again for it.
  if (tl_buffer == b) tl_buffer = nullptr;
  b->state.store(kBufferRetired, std::memory_order_release);
  alt_stack_release_at_thread_exit();
}

// over_bound: take it even past the byte bound (still counted in chunk_bytes).
EventChunk* new_chunk(BufferRegistry* reg, bool over_bound = false) {
  uint64_t used = reg->chunk_bytes.fetch_add(sizeof(EventChunk), std::memory_order_relaxed);
  if (!over_bound && used + sizeof(EventChunk) > reg->byte_limit) {
    reg->chunk_bytes.fetch_sub(sizeof(EventChunk), std::memory_order_relaxed);
    return nullptr;
  }
  // Populated up front: one syscall instead of 128 page faults on the application thread.
  auto* c = static_cast<EventChunk*>(raw_mmap_anon(sizeof(EventChunk), MAP_POPULATE));
  if (!c) {
    reg->chunk_bytes.fetch_sub(sizeof(EventChunk), std::memory_order_relaxed);
    return nullptr;
  }
  // Fresh anonymous pages are zero: committed = 0, next = nullptr.
  return c;
}

EventChunk* take_spare(ThreadBuffer* b) {
  for (auto& slot : b->spare) {
    if (slot.load(std::memory_order_relaxed) == nullptr) continue;
    if (EventChunk* c = slot.exchange(nullptr, std::memory_order_acquire)) {
      c->committed.store(0, std::memory_order_relaxed);
      c->next.store(nullptr, std::memory_order_relaxed);
      return c;
    }
  }
  return nullptr;
}

ThreadBuffer* claim_free_buffer(BufferRegistry* reg) {
  for (ThreadBuffer* b = reg->head.load(std::memory_order_acquire); b; b = b->next_registered) {
    uint32_t expected = kBufferFree;
    if (b->state.load(std::memory_order_relaxed) == kBufferFree &&
        b->state.compare_exchange_strong(expected, kBufferClaiming, std::memory_order_acquire)) {
      return b;
    }
  }
  return nullptr;
}

}  // namespace

ThreadBuffer* buffer_attach(BufferRegistry* reg) {
  ThreadBuffer* b = claim_free_buffer(reg);
  if (!b) {
    EventChunk* c = new_chunk(reg);
    if (!c) return nullptr;
    b = static_cast<ThreadBuffer*>(raw_mmap_anon(sizeof(ThreadBuffer)));
    if (!b) return nullptr;
    b->write_chunk = b->read_chunk = c;
    b->state.store(kBufferClaiming, std::memory_order_relaxed);
    b->tid.store(raw_gettid(), std::memory_order_relaxed);
    b->state.store(kBufferOwned, std::memory_order_release);
    ThreadBuffer* head = reg->head.load(std::memory_order_relaxed);
    do {
      b->next_registered = head;
    } while (!reg->head.compare_exchange_weak(head, b, std::memory_order_release,
                                              std::memory_order_relaxed));
  } else {
    // A free buffer is fully drained; the new owner continues its chunk and its chain
    // (agent/event_slot.h) where they stand.
    b->tid.store(raw_gettid(), std::memory_order_relaxed);
    b->state.store(kBufferOwned, std::memory_order_release);
  }
  // The thread's alternate stack comes with the key whose destructor gives it back: once
  // per thread, like this attach, never on the hot path.
  if (g_buffer_key_ready.load(std::memory_order_acquire) &&
      pthread_setspecific(g_buffer_key, b) == 0) {
    alt_stack_for_this_thread();
  }
  return b;
}

void buffer_retire_at_thread_exit() {
  if (pthread_key_create(&g_buffer_key, retire_buffer) == 0) {
    g_buffer_key_ready.store(true, std::memory_order_release);
  }
}

bool buffer_next_chunk(BufferRegistry* reg, ThreadBuffer* b, bool lossless) {
  EventChunk* c = take_spare(b);
  if (!c) c = new_chunk(reg);
  // Lossless: wait for the sender to free room instead of dropping. Only chunks this
  // thread has moved past come back to it as spares; with none behind, other threads' chunks
  // hold the bound and nothing would ever come, so it takes one past the bound: at most two
  // chunks a thread beyond MEMTAP_BUFFER_MB. It sleeps rather than spins: the sender drains
  // every few milliseconds anyway, and a spinning thread keeps a core busy, on which the
  // monitor it waits for holds back (common/cpu_share.h).
  while (!c && lossless) {
    if (b->chunks_behind.load(std::memory_order_acquire) == 0) {
      c = new_chunk(reg, true);
      break;
    }
    raw_sleep_ns(100'000);
    c = take_spare(b);
    if (!c) c = new_chunk(reg);
  }
  if (!c) return false;
  b->chunks_behind.fetch_add(1, std::memory_order_release);
  b->write_chunk->next.store(c, std::memory_order_release);
  b->write_chunk = c;
  b->write_pos = 0;
  return true;
}

namespace {

// Writes one record into b (null: the thread's first record, which attaches it); returns
// the thread's buffer. Between record_begin and record_end.
ThreadBuffer* write_record(BufferRegistry* reg, bool lossless, ThreadBuffer* b, EventKind kind,
                           uint64_t addr, uint64_t size_bytes, uint64_t ts_ns, uint64_t tag) {
  if (!b) {
    b = buffer_attach(reg);
    if (!b) {
      reg->dropped_no_buffer.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    // The thread's first record: the time its attach took may have let the sender's bound
    // pass its timestamp. Later is right for a malloc (the block was the thread's before)
    // and for a free recorded before the real one; a moved realloc's free, recorded after,
    // could in principle then follow another thread's malloc of that address by a cycle.
    b->attach_floor = reg->sender_cycle_clock.load(std::memory_order_relaxed);
  }
  // Also every later record stamped before the attach: the sender's bound may have passed
  // it as well, and a pool event's block must not go back before its stream record (the
  // monitor would begin a new run between them and give the block another stream). Here
  // only: a narrow slot never goes back in time, so such a record always comes this way;
  // records that go back for other reasons (a nested hook's outer call) keep their stamp.
  ts_ns = std::max(ts_ns, b->attach_floor);
  // The chain runs on across chunks, so a narrow slot computed here stays right after a
  // move to the next chunk.
  const uint64_t narrow = tag == 0 ? narrow_slot(kind, addr, size_bytes, ts_ns, b->write_chain) : 0;
  uint32_t need = kWideSlots;
  if (narrow != 0) {
    need = 1;
  } else if (tag == 0 && fits_compact(addr, size_bytes)) {
    need = kCompactSlots;
  }
  if (b->write_pos + need > kChunkSlots && !buffer_next_chunk(reg, b, lossless)) {
    b->dropped.fetch_add(1, std::memory_order_relaxed);
    return b;
  }
  EventChunk* c = b->write_chunk;
  uint32_t i = b->write_pos;
  if (narrow != 0) {
    c->slots[i] = narrow;
  } else if (need == kCompactSlots) {
    pack_compact(&c->slots[i], kind, addr, size_bytes, ts_ns);
  } else {
    pack_wide(&c->slots[i], kind, addr, size_bytes, ts_ns, tag);
  }
  publish_record(b, c, i + need, ts_ns, addr);
  return b;
}

}  // namespace

void record_slow(BufferRegistry* reg, bool lossless, ThreadBuffer* b, EventKind kind, uint64_t addr,
                 uint64_t size_bytes, uint64_t ts_ns, uint64_t tag) {
  if (b == &g_buffer_busy) {
    // Inside another record on this thread: aside, for it to write. The slot is taken with
    // one atomic add so that a handler interrupting this one takes the next.
    uint32_t n = __atomic_fetch_add(&tl_deferred.count, 1, __ATOMIC_RELAXED);
    if (n < kDeferredRecords) {
      tl_deferred.records[n] = {kind, addr, size_bytes, ts_ns, tag};
    } else {
      reg->dropped_deferred.fetch_add(1, std::memory_order_relaxed);
    }
    std::atomic_signal_fence(std::memory_order_seq_cst);
    tl_buffer = b;  // still busy: the interrupted record goes on
    return;
  }
  record_end(reg, lossless, write_record(reg, lossless, b, kind, addr, size_bytes, ts_ns, tag));
}

void record_deferred(BufferRegistry* reg, bool lossless) {
  ThreadBuffer* b = record_begin();
  if (b == &g_buffer_busy) return;  // inside a record still: that one writes them
  uint32_t done = 0;
  uint32_t count = __atomic_load_n(&tl_deferred.count, __ATOMIC_RELAXED);
  for (;;) {
    for (; done < count && done < kDeferredRecords; ++done) {
      const DeferredRecord& r = tl_deferred.records[done];
      b = write_record(reg, lossless, b, r.kind, r.addr, r.size_bytes, r.ts_ns, r.tag);
    }
    // A handler may put more aside while these are written: empty only what was seen.
    if (__atomic_compare_exchange_n(&tl_deferred.count, &count, 0, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      break;
    }
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tl_buffer = b;
}

void registry_reset_after_fork(BufferRegistry* reg, uint32_t pid) {
  // Only the forking thread exists in the child; every record in the buffers belongs to
  // the parent, which sends them itself.
  reg->pid = pid;
  reg->child_count.store(0, std::memory_order_relaxed);
  reg->dropped_no_buffer.store(0, std::memory_order_relaxed);
  reg->dropped_deferred.store(0, std::memory_order_relaxed);
  uint64_t bytes = 0;
  for (ThreadBuffer* b = reg->head.load(std::memory_order_relaxed); b; b = b->next_registered) {
    EventChunk* keep = b->write_chunk;
    for (EventChunk* c = b->read_chunk; c && c != keep;) {
      EventChunk* next = c->next.load(std::memory_order_relaxed);
      raw_munmap(c, sizeof(EventChunk));
      c = next;
    }
    for (auto& slot : b->spare) {
      if (EventChunk* s = slot.exchange(nullptr, std::memory_order_relaxed)) {
        raw_munmap(s, sizeof(EventChunk));
      }
    }
    keep->committed.store(0, std::memory_order_relaxed);
    keep->next.store(nullptr, std::memory_order_relaxed);
    b->write_pos = 0;
    b->read_chunk = keep;
    b->read_pos = 0;
    b->write_chain = b->read_chain = SlotChain{};
    b->idle_cycles = 0;
    b->dropped.store(0, std::memory_order_relaxed);
    b->chunks_behind.store(0, std::memory_order_relaxed);
    bool mine = (b == tl_buffer);
    b->state.store(mine ? kBufferOwned : kBufferFree, std::memory_order_relaxed);
    if (mine) b->tid.store(raw_gettid(), std::memory_order_relaxed);
    bytes += sizeof(EventChunk);
  }
  reg->chunk_bytes.store(bytes, std::memory_order_relaxed);
}

}  // namespace memtap
