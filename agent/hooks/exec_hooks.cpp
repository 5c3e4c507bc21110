// Hooks for the exec family, so that what a process recorded up to exec reaches the monitor.
//
// exec replaces the image without running exit handlers: without these hooks, whatever the
// sender had not drained yet (up to MEMTAP_DRAIN_INTERVAL_US of events) was lost with it.
// Before the real call the sender drains every buffer, sends it and closes its socket with
// linger, so that ZeroMQ has written everything (agent_before_exec). If exec returns (it
// failed), the same sender goes on over a new socket and errno is the one exec set. Other
// threads keep allocating meanwhile: what they record after that last drain is lost by exec
// itself, with their memory, as it would be without memtap. A vfork() child (it shares the
// parent's memory) and a fork() child without a sender of its own exec unflushed.
//
// glibc's exec functions call execve internally, not through these symbols, so one call
// flushes once. execl, execlp and execle become execv, execvp and execve here; their
// arguments are gathered on the stack, as glibc's own execl does (never the allocator: a
// vfork() child shares the parent's heap, and exec may be called from a signal handler).
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdarg>
#include <cstddef>

#include "agent/agent_state.h"

#define MEMTAP_HOOK extern "C" __attribute__((visibility("default")))

using namespace memtap;

namespace {

struct RealExec {
  int (*execve)(const char*, char* const[], char* const[]);
  int (*execv)(const char*, char* const[]);
  int (*execvp)(const char*, char* const[]);
  int (*execvpe)(const char*, char* const[], char* const[]);
  int (*fexecve)(int, char* const[], char* const[]);
  int (*execveat)(int, const char*, char* const[], char* const[], int);
};

// Resolved by the constructor below (before any exec the program makes), or by the first
// hook called before it. Threads racing here compute the same pointers.
RealExec g_exec;
std::atomic<bool> g_exec_resolved{false};

template <typename F>
void lookup(F*& slot, const char* name) {
  slot = reinterpret_cast<F*>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor)) void resolve_exec_functions() {
  if (g_exec_resolved.load(std::memory_order_acquire)) return;
  ++tl_agent_busy;
  lookup(g_exec.execve, "execve");
  lookup(g_exec.execv, "execv");
  lookup(g_exec.execvp, "execvp");
  lookup(g_exec.execvpe, "execvpe");
  lookup(g_exec.fexecve, "fexecve");
  lookup(g_exec.execveat, "execveat");  // glibc 2.34 and later
  --tl_agent_busy;
  g_exec_resolved.store(true, std::memory_order_release);
}

const RealExec& real() {
  resolve_exec_functions();
  return g_exec;
}

int no_function() {
  errno = ENOSYS;
  return -1;
}

// Flushes, runs `exec`, and if it returns goes on recording, errno as exec left it.
template <typename Exec>
int flushed(Exec exec) {
  const bool resume = agent_before_exec();
  const int rc = exec();
  if (resume) {
    const int error = errno;
    agent_after_failed_exec();
    errno = error;
  }
  return rc;
}

// How many arguments `arg` and the list after it hold before the null pointer that ends
// them (consumed); -1 past INT_MAX, where glibc's execl says E2BIG.
ptrdiff_t count_args(const char* arg, va_list* ap) {
  if (!arg) return 0;
  ptrdiff_t argc = 1;
  while (va_arg(*ap, const char*)) {
    if (argc == INT_MAX) return -1;
    ++argc;
  }
  return argc;
}

// argv[0..argc], the null included, from `arg` and the list after it; the list is left
// after that null, where execle's environment follows.
void fill_args(char** argv, ptrdiff_t argc, const char* arg, va_list* ap) {
  argv[0] = const_cast<char*>(arg);
  for (ptrdiff_t i = 1; i <= argc; ++i) argv[i] = va_arg(*ap, char*);
}

}  // namespace

MEMTAP_HOOK int execve(const char* path, char* const argv[], char* const envp[]) {
  return flushed([&] {
    if (real().execve) return real().execve(path, argv, envp);
    return int(syscall(SYS_execve, path, argv, envp));
  });
}

MEMTAP_HOOK int execv(const char* path, char* const argv[]) {
  return flushed([&] { return real().execv ? real().execv(path, argv) : no_function(); });
}

MEMTAP_HOOK int execvp(const char* file, char* const argv[]) {
  return flushed([&] { return real().execvp ? real().execvp(file, argv) : no_function(); });
}

MEMTAP_HOOK int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return flushed([&] { return real().execvpe ? real().execvpe(file, argv, envp) : no_function(); });
}

MEMTAP_HOOK int fexecve(int fd, char* const argv[], char* const envp[]) {
  return flushed([&] { return real().fexecve ? real().fexecve(fd, argv, envp) : no_function(); });
}

MEMTAP_HOOK int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                         int flags) {
  return flushed([&] {
    if (real().execveat) return real().execveat(dirfd, path, argv, envp, flags);
    return int(syscall(SYS_execveat, dirfd, path, argv, envp, flags));
  });
}

// The list forms. The array is as large as glibc's own execl makes it, on the stack too.
MEMTAP_HOOK int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const ptrdiff_t argc = count_args(arg, &ap);
  va_end(ap);
  if (argc < 0) {
    errno = E2BIG;
    return -1;
  }
  char* argv[argc + 1];
  va_start(ap, arg);
  fill_args(argv, argc, arg, &ap);
  va_end(ap);
  return execv(path, argv);
}

MEMTAP_HOOK int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const ptrdiff_t argc = count_args(arg, &ap);
  va_end(ap);
  if (argc < 0) {
    errno = E2BIG;
    return -1;
  }
  char* argv[argc + 1];
  va_start(ap, arg);
  fill_args(argv, argc, arg, &ap);
  va_end(ap);
  return execvp(file, argv);
}

MEMTAP_HOOK int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const ptrdiff_t argc = count_args(arg, &ap);
  va_end(ap);
  if (argc < 0) {
    errno = E2BIG;
    return -1;
  }
  char* argv[argc + 1];
  va_start(ap, arg);
  fill_args(argv, argc, arg, &ap);
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  return execve(path, argv, envp);
}
