// Every thread of the sender's namespace (the sender thread, its catch-up thread, ZeroMQ's
// I/O thread and reaper) runs on a stack mapped here, never on one from glibc's cache of
// exited threads' stacks.
//
// Why: glibc (2.36, Debian 12's) keeps one cache of stacks for the whole process, in the
// dynamic linker, shared by every copy of libc; and pthread_create, when it reuses a cached
// stack, frees the dynamic TLS blocks its previous thread left with its own libc's free.
// Those blocks come from the dynamic linker, which allocates with the program's malloc. The
// sender's libc (dlmopen gives the namespace a copy) so took chunks of the program's heap
// into its own and handed them out again, to ZeroMQ: both heaps then used the same memory.
// Seen as a SIGSEGV of the traced program after a few dozen failed execs with allocations
// in between (each reconnect starts ZeroMQ's threads again), and possible wherever the
// namespace starts a thread after other threads have ended: in a fork() child of a
// multithreaded program, every thread of the parent but the forking one leaves its stack to
// the cache. A thread on a stack of its own takes nothing from the cache, and when it ends
// glibc hands its TLS back to the dynamic linker, whose free is the right one.
//
// libmemtap_sender.so comes first in its namespace's lookup scope, so these pthread_create
// and pthread_join are the ones libzmq and libstdc++ there call.
#include "agent/sender/namespace_threads.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace {

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
using JoinFn = int (*)(pthread_t, void**);

struct OwnStack {
  pthread_t thread;
  void* mapping;  // nullptr: a free entry
  size_t bytes;   // the whole mapping, guard page included
};

// The stacks of joinable threads not joined yet, unmapped by the join. A handful at a time
// (four per sender); a thread that finds the table full keeps its stack for good.
// Process-wide state of this namespace: pthread_create and pthread_join are free functions.
constexpr size_t kMaxStacks = 32;
OwnStack g_stacks[kMaxStacks];
pthread_mutex_t g_stacks_lock = PTHREAD_MUTEX_INITIALIZER;

// libc's own, found by resolve_thread_functions before the namespace has a thread: looked
// up later, from one of its threads, dlsym would take the loader's lock, which the
// program's libc, believing its process single-threaded, releases without waking a
// waiter (a hang at exit under load, seen).
CreateFn g_real_create = nullptr;
JoinFn g_real_join = nullptr;

void remember(pthread_t thread, void* mapping, size_t bytes) {
  pthread_mutex_lock(&g_stacks_lock);
  for (OwnStack& s : g_stacks) {
    if (!s.mapping) {
      s = {thread, mapping, bytes};
      break;
    }
  }
  pthread_mutex_unlock(&g_stacks_lock);
}

// The joined thread's stack, taken out of the table; {nullptr, 0} if it has none there.
OwnStack forget(pthread_t thread) {
  OwnStack found{};
  pthread_mutex_lock(&g_stacks_lock);
  for (OwnStack& s : g_stacks) {
    if (s.mapping && pthread_equal(s.thread, thread)) {
      found = s;
      s = {};
      break;
    }
  }
  pthread_mutex_unlock(&g_stacks_lock);
  return found;
}

}  // namespace

namespace memtap {

void resolve_thread_functions() {
  if (!g_real_create)
    g_real_create = reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  if (!g_real_join) g_real_join = reinterpret_cast<JoinFn>(dlsym(RTLD_NEXT, "pthread_join"));
}

}  // namespace memtap

extern "C" __attribute__((visibility("default"))) int pthread_create(pthread_t* thread,
                                                                     const pthread_attr_t* attr,
                                                                     void* (*start)(void*),
                                                                     void* arg) {
  const CreateFn create = g_real_create;
  if (!create) return EAGAIN;
  // A copy of the caller's attributes (glibc's are plain data plus a pointer to extensions
  // that the copy shares and never frees), or the namespace's defaults.
  pthread_attr_t own;
  if (attr) {
    void* given = nullptr;
    size_t given_bytes = 0;
    // glibc gives the lowest address, the top set less the size: with no top set (nullptr),
    // 0 - size, which is not nullptr once a size is.
    if (pthread_attr_getstack(attr, &given, &given_bytes) == 0 &&
        reinterpret_cast<uintptr_t>(given) + given_bytes != 0) {
      return create(thread, attr, start, arg);  // a stack of the caller's own
    }
    memcpy(&own, attr, sizeof own);
  } else if (pthread_getattr_default_np(&own) != 0) {
    pthread_attr_init(&own);
  }
  size_t bytes = 0;
  pthread_attr_getstacksize(&own, &bytes);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  // Untouched pages cost nothing (MAP_NORESERVE); a guard page below, as glibc's own.
  void* mapping = mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  int rc = EAGAIN;
  if (mapping != MAP_FAILED) {
    mprotect(mapping, page, PROT_NONE);
    pthread_attr_setstack(&own, static_cast<char*>(mapping) + page, bytes);
    rc = create(thread, &own, start, arg);
  }
  int detach = PTHREAD_CREATE_JOINABLE;
  pthread_attr_getdetachstate(&own, &detach);
  if (!attr) pthread_attr_destroy(&own);
  if (mapping == MAP_FAILED) return rc;
  if (rc != 0) {
    munmap(mapping, bytes + page);
  } else if (detach == PTHREAD_CREATE_JOINABLE) {
    remember(*thread, mapping, bytes + page);
  }
  return rc;
}

extern "C" __attribute__((visibility("default"))) int pthread_join(pthread_t thread,
                                                                   void** result) {
  const JoinFn join = g_real_join;
  if (!join) return EINVAL;
  const int rc = join(thread, result);
  // Joined: the kernel has cleared the thread's id word, so nothing runs on the stack now.
  if (rc == 0) {
    const OwnStack s = forget(thread);
    if (s.mapping) munmap(s.mapping, s.bytes);
  }
  return rc;
}
