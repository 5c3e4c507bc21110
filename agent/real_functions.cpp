// Resolving the real allocator and system functions; see real_functions.h.
#include "agent/real_functions.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "agent/event_clock.h"

namespace memtap {

RealFunctions g_real;

// 64 KiB is far more than glibc needs (one dlerror buffer); when it runs out, allocation
// fails with nullptr.
alignas(64) unsigned char g_bootstrap_pool[kBootstrapPoolBytes];

namespace {

constexpr size_t kPoolBytes = kBootstrapPoolBytes;
unsigned char* const g_pool = g_bootstrap_pool;
std::atomic<size_t> g_pool_used{0};
std::atomic<bool> g_resolved{false};
__thread int tl_resolving __attribute__((tls_model("initial-exec"))) = 0;

struct PoolHeader {
  size_t size;
  size_t pad;
};

template <typename F>
void lookup(F*& slot, const char* name) {
  slot = reinterpret_cast<F*>(dlsym(RTLD_NEXT, name));
}

}  // namespace

bool resolving_on_this_thread() {
  return tl_resolving != 0;
}

bool resolve_real_functions() {
  if (g_resolved.load(std::memory_order_acquire)) return true;
  if (tl_resolving) return false;
  tl_resolving = 1;
  RealFunctions r{};
  lookup(r.malloc, "malloc");
  lookup(r.free, "free");
  lookup(r.calloc, "calloc");
  lookup(r.realloc, "realloc");
  lookup(r.reallocarray, "reallocarray");
  lookup(r.posix_memalign, "posix_memalign");
  lookup(r.aligned_alloc, "aligned_alloc");
  lookup(r.memalign, "memalign");
  lookup(r.valloc, "valloc");
  lookup(r.pvalloc, "pvalloc");
  lookup(r.mmap, "mmap");
  lookup(r.mmap64, "mmap64");
  lookup(r.munmap, "munmap");
  lookup(r.mremap, "mremap");
  lookup(r.fork, "fork");
  lookup(r.exit_, "_exit");
  lookup(r.Exit, "_Exit");
  lookup(r.sigaction, "sigaction");
  lookup(r.signal, "signal");
  lookup(r.sysv_signal, "sysv_signal");
  lookup(r.sigset, "sigset");
  lookup(r.sigignore, "sigignore");
  lookup(r.siginterrupt, "siginterrupt");
  lookup(r.execve, "execve");
  lookup(r.execv, "execv");
  lookup(r.execvp, "execvp");
  lookup(r.execvpe, "execvpe");
  lookup(r.fexecve, "fexecve");
  lookup(r.execveat, "execveat");
  lookup(r.close_range, "close_range");
  lookup(r.closefrom, "closefrom");
  lookup(r.close, "close");
  lookup(r.dup2, "dup2");
  lookup(r.dup3, "dup3");
  lookup(r.dlclose, "dlclose");
  // Threads racing here compute the same pointers; the last copy wins harmlessly.
  memcpy(&g_real, &r, sizeof r);
  // Decided before the first record, so that every record of the process uses one clock.
  // MEMTAP_CLOCK=monotonic forces clock_gettime (a CPU whose TSC we should not trust).
  const char* clock = getenv("MEMTAP_CLOCK");
  g_clock_is_tsc = cpu_has_invariant_tsc() && !(clock && strcmp(clock, "monotonic") == 0);
  g_trace_start = event_clock_now();
  g_resolved.store(true, std::memory_order_release);
  tl_resolving = 0;
  return true;
}

void* bootstrap_alloc(size_t size, size_t alignment) {
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  size_t used = g_pool_used.load(std::memory_order_relaxed);
  for (;;) {
    size_t start = (used + sizeof(PoolHeader) + alignment - 1) & ~(alignment - 1);
    size_t end = start + size;
    if (end > kPoolBytes) return nullptr;
    if (g_pool_used.compare_exchange_weak(used, end, std::memory_order_relaxed)) {
      reinterpret_cast<PoolHeader*>(g_pool + start)[-1].size = size;
      return g_pool + start;  // static storage is zero, as calloc promises
    }
  }
}

size_t bootstrap_block_size(const void* p) {
  return reinterpret_cast<const PoolHeader*>(p)[-1].size;
}

}  // namespace memtap
