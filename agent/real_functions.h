// The functions our hooks stand in front of, found with dlsym(RTLD_NEXT) so that another
// interposer (tcmalloc, jemalloc) loaded after us still gets its calls.
//
// dlsym itself allocates (calloc for its error state), so while we resolve, the malloc
// family is served from a small static pool (bootstrap_alloc); those blocks are never
// handed to the real free.
#pragma once

#include <errno.h>
#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace memtap {

struct RealFunctions {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  void* (*reallocarray)(void*, size_t, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  void* (*mmap)(void*, size_t, int, int, int, off_t);
  void* (*mmap64)(void*, size_t, int, int, int, off_t);
  int (*munmap)(void*, size_t);
  void* (*mremap)(void*, size_t, size_t, int, ...);
  pid_t (*fork)(void);
  void (*exit_)(int);  // noreturn; the hooks end with exit_group as a fallback
  void (*Exit)(int);
  // Signal dispositions (hooks/signal_hooks.cpp); bsd_signal and ssignal are glibc's signal.
  int (*sigaction)(int, const struct sigaction*, struct sigaction*);
  sighandler_t (*signal)(int, sighandler_t);
  sighandler_t (*sysv_signal)(int, sighandler_t);
  sighandler_t (*sigset)(int, sighandler_t);
  int (*sigignore)(int);
  int (*siginterrupt)(int, int);
  // The exec family (hooks/exec_hooks.cpp); execl, execlp and execle become these.
  int (*execve)(const char*, char* const[], char* const[]);
  int (*execv)(const char*, char* const[]);
  int (*execvp)(const char*, char* const[]);
  int (*execvpe)(const char*, char* const[], char* const[]);
  int (*fexecve)(int, char* const[], char* const[]);
  int (*execveat)(int, const char*, char* const[], char* const[], int);  // glibc >= 2.34
  int (*close_range)(unsigned int, unsigned int, int);                   // glibc >= 2.34
  void (*closefrom)(int);                                                // glibc >= 2.34
  int (*close)(int);
  int (*dup2)(int, int);
  int (*dup3)(int, int, int);
  int (*dlclose)(void*);  // hooks/dlclose_hook.cpp
};

// Process-wide: the hooks of every thread call through it. Filled once by
// resolve_real_functions(); entries are written before `resolved` is set.
extern RealFunctions g_real;

// Idempotent and thread-safe; returns false only while this thread is resolving.
bool resolve_real_functions();
bool resolving_on_this_thread();

// `slot`, an entry of g_real, resolved first if need be; nullptr with errno ENOSYS while
// this thread is inside dlsym resolving them, or where libc lacks the function. For the
// hooks off the allocation path (signals, exec), which may run before the constructor.
template <typename F>
F* real_function(F* const& slot) {
  if (!slot) resolve_real_functions();
  if (!slot) errno = ENOSYS;
  return slot;
}

void* bootstrap_alloc(size_t size, size_t alignment);

// Static pool for what dlsym allocates before malloc is known (bootstrap_alloc). A global
// because every free() asks whether its block came from here: inline, and hidden so that
// the address needs no GOT load, that is two compares instead of a call on the hot path.
constexpr size_t kBootstrapPoolBytes = 64 * 1024;
extern unsigned char g_bootstrap_pool[kBootstrapPoolBytes] __attribute__((visibility("hidden")));

inline bool is_bootstrap_block(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const auto pool = reinterpret_cast<uintptr_t>(g_bootstrap_pool);
  return at - pool < kBootstrapPoolBytes;
}
size_t bootstrap_block_size(const void* p);

}  // namespace memtap
