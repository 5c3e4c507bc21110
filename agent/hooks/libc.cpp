// Hooks for the libc allocator, anonymous mappings, fork and _exit.
//
// Each hook calls the real function and writes one record (agent/event_buffer_writer.h).
// Order matters for causality: a release (free, munmap) is recorded before the memory
// goes back, an acquisition after it is obtained, so a free's timestamp precedes that of
// any malloc that returns the same address, on any thread.
//
// An acquisition of at least g_stack_min_size bytes is preceded by its call stack records
// (agent/stacks.h); with stacks off that is one compare against UINT64_MAX, never taken.
#include <sys/mman.h>

#include <cstdarg>
#include <cstring>

#include "agent/agent_state.h"
#include "agent/async_signals.h"
#include "agent/event_buffer_writer.h"
#include "agent/event_clock.h"
#include "agent/raw_syscalls.h"
#include "agent/real_functions.h"
#include "agent/stacks.h"

#define MEMTAP_HOOK extern "C" __attribute__((visibility("default")))

using namespace memtap;

namespace {

inline bool ready() {
  return g_real.malloc != nullptr || resolve_real_functions();
}

inline void note(EventKind kind, const void* p, size_t size) {
  if (hooks_record()) {
    record_event(&g_agent.registry, g_agent.lossless, kind, uint64_t(p), size, event_clock_now());
  }
}

// A block or mapping obtained: its stacks first when it is large enough.
inline void note_acquired(EventKind kind, const void* p, size_t size) {
  if (hooks_record()) {
    if (__builtin_expect(size >= g_stack_min_size, 0)) record_call_stacks();
    record_event(&g_agent.registry, g_agent.lossless, kind, uint64_t(p), size, event_clock_now());
  }
}

// realloc moved or resized p into q: the old block ends at ts_before, the new one starts now.
inline void on_realloc(void* p, void* q, size_t size, uint64_t ts_before) {
  if (!hooks_record()) return;
  if (p)
    record_event(&g_agent.registry, g_agent.lossless, EventKind::kFree, uint64_t(p), 0, ts_before);
  if (q) {
    if (__builtin_expect(size >= g_stack_min_size, 0)) record_call_stacks();
    record_event(&g_agent.registry, g_agent.lossless, EventKind::kMalloc, uint64_t(q), size,
                 event_clock_now());
  }
}

void* realloc_bootstrap_block(void* p, size_t size) {
  void* q = g_real.malloc ? g_real.malloc(size) : bootstrap_alloc(size, 16);
  if (q) memcpy(q, p, std::min(size, bootstrap_block_size(p)));
  return q;
}

}  // namespace

MEMTAP_HOOK void* malloc(size_t size) {
  if (__builtin_expect(!ready(), 0)) return bootstrap_alloc(size, 16);
  void* p = g_real.malloc(size);
  if (p) note_acquired(EventKind::kMalloc, p, size);
  return p;
}

MEMTAP_HOOK void free(void* p) {
  if (!p || is_bootstrap_block(p)) return;
  if (__builtin_expect(!ready(), 0)) return;  // cannot happen: p came from a real malloc
  note(EventKind::kFree, p, 0);
  g_real.free(p);
}

MEMTAP_HOOK void* calloc(size_t n, size_t size) {
  if (__builtin_expect(!ready(), 0)) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) return nullptr;
    return bootstrap_alloc(total, 16);
  }
  void* p = g_real.calloc(n, size);
  if (p) note_acquired(EventKind::kMalloc, p, n * size);
  return p;
}

MEMTAP_HOOK void* realloc(void* p, size_t size) {
  if (__builtin_expect(!ready(), 0) || (p && is_bootstrap_block(p))) {
    return p ? realloc_bootstrap_block(p, size) : bootstrap_alloc(size, 16);
  }
  uint64_t ts_before = event_clock_now();
  void* q = g_real.realloc(p, size);
  // glibc: realloc(p, 0) frees p and returns null; a failed realloc leaves p alone.
  if (q) {
    on_realloc(p, q, size, ts_before);
  } else if (p && size == 0) {
    on_realloc(p, nullptr, 0, ts_before);
  }
  return q;
}

MEMTAP_HOOK void* reallocarray(void* p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, total);
}

MEMTAP_HOOK int posix_memalign(void** out, size_t alignment, size_t size) {
  if (__builtin_expect(!ready(), 0)) {
    *out = bootstrap_alloc(size, alignment);
    return *out ? 0 : ENOMEM;
  }
  int rc = g_real.posix_memalign(out, alignment, size);
  if (rc == 0) note_acquired(EventKind::kMalloc, *out, size);
  return rc;
}

MEMTAP_HOOK void* aligned_alloc(size_t alignment, size_t size) {
  if (__builtin_expect(!ready(), 0)) return bootstrap_alloc(size, alignment);
  void* p = g_real.aligned_alloc(alignment, size);
  if (p) note_acquired(EventKind::kMalloc, p, size);
  return p;
}

MEMTAP_HOOK void* memalign(size_t alignment, size_t size) {
  if (__builtin_expect(!ready(), 0)) return bootstrap_alloc(size, alignment);
  void* p = g_real.memalign(alignment, size);
  if (p) note_acquired(EventKind::kMalloc, p, size);
  return p;
}

MEMTAP_HOOK void* valloc(size_t size) {
  if (__builtin_expect(!ready(), 0)) return bootstrap_alloc(size, 4096);
  void* p = g_real.valloc(size);
  if (p) note_acquired(EventKind::kMalloc, p, size);
  return p;
}

MEMTAP_HOOK void* pvalloc(size_t size) {
  if (__builtin_expect(!ready(), 0)) return bootstrap_alloc(size, 4096);
  void* p = g_real.pvalloc(size);
  if (p) note_acquired(EventKind::kMalloc, p, size);
  return p;
}

// A PROT_NONE anonymous mapping is address space, not memory: the CUDA driver reserves tens
// of GiB that way (on an H100 the host's Reserved curve read 174 GiB), and glibc reserves
// its arenas' heaps so before it makes parts of them accessible.
MEMTAP_HOOK void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  void* p = ready() ? g_real.mmap(addr, len, prot, flags, fd, off)
                    : reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
  if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && prot != PROT_NONE) {
    note_acquired(EventKind::kMmap, p, len);
  }
  return p;
}

MEMTAP_HOOK void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

MEMTAP_HOOK int munmap(void* addr, size_t len) {
  if (!ready()) return int(syscall(SYS_munmap, addr, len));
  // Recorded first: the range may be mapped again by another thread as soon as it is gone.
  // The monitor ignores ranges it never saw mapped (files, our own buffers).
  note(EventKind::kMunmap, addr, len);
  return g_real.munmap(addr, len);
}

MEMTAP_HOOK void* mremap(void* old, size_t old_size, size_t new_size, int flags, ...) {
  void* fixed = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    fixed = va_arg(ap, void*);
    va_end(ap);
  }
  if (!ready())
    return reinterpret_cast<void*>(syscall(SYS_mremap, old, old_size, new_size, flags, fixed));
  uint64_t ts_before = event_clock_now();
  void* p = g_real.mremap(old, old_size, new_size, flags, fixed);
  if (p != MAP_FAILED && hooks_record()) {
    if (!(flags & MREMAP_DONTUNMAP)) {
      record_event(&g_agent.registry, g_agent.lossless, EventKind::kMunmap, uint64_t(old), old_size,
                   ts_before);
    }
    if (__builtin_expect(new_size >= g_stack_min_size, 0)) record_call_stacks();
    record_event(&g_agent.registry, g_agent.lossless, EventKind::kMmap, uint64_t(p), new_size,
                 event_clock_now());
  }
  return p;
}

MEMTAP_HOOK pid_t fork(void) {
  if (!ready()) return pid_t(syscall(SYS_fork));
  uint32_t parent = raw_getpid();
  uint64_t ts = event_clock_now();
  // From before the fork: the child inherits the mask, and its sender starts in
  // agent_after_fork_child. Restored in both once this returns.
  AsyncSignalsHeld held;
  pid_t pid = g_real.fork();
  if (pid > 0) {
    agent_after_fork_parent(uint32_t(pid), ts);
  } else if (pid == 0) {
    agent_after_fork_child(parent);
  }
  return pid;
}

// Python's multiprocessing children (DataLoader workers) end with os._exit: no atexit
// handler runs, so the flush happens here.
MEMTAP_HOOK void _exit(int status) {
  agent_stop(ProcessEnd::kExited, status & 0xff);
  if (g_real.exit_) g_real.exit_(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

MEMTAP_HOOK void _Exit(int status) {
  agent_stop(ProcessEnd::kExited, status & 0xff);
  if (g_real.Exit) g_real.Exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
