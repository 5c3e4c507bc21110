// Hooks for the exec family, so that what a process recorded up to exec reaches the monitor.
//
// exec replaces the image without running exit handlers: without these hooks, whatever the
// sender had not drained yet (up to MEMTAP_DRAIN_INTERVAL_US of events) was lost with it.
// Before the real call the sender drains every buffer, sends it and closes its socket with
// linger, so that ZeroMQ has written everything (agent_before_exec). If exec returns (it
// failed), the same sender goes on over a new socket, opened once there is something to send
// (a PATH search's next exec finds nothing to flush), and errno is the one exec set. Other
// threads keep allocating meanwhile: what they record after that last drain is lost by exec
// itself, with their memory, as it would be without memtap. A vfork() child (it shares the
// parent's memory) and a fork() child without a sender of its own exec unflushed.
//
// close_range and closefrom too: a program that closes every descriptor (Python's
// subprocess in a fork() child between preexec_fn and exec, daemons) would close ZeroMQ's
// under the sender's threads, and ZeroMQ aborts the process on a descriptor that is gone
// (under load, half of Python's subprocess.run(preexec_fn=...) children died so). The
// sender steps out first, flushing and closing its socket as before an exec, and comes back
// on a new socket once they are closed, as after a failed exec. close() too, for a program
// that closes one descriptor at a time: the sender's namespace marks the descriptors it holds
// (agent/sender/sender_fds.cpp), and closing one of those steps the sender out the same way.
// dup2 and dup3 onto one of them too, which close it as they replace it (a shell's
// `exec 5>file`). Any other descriptor costs these one bit test.
//
// glibc's exec functions call execve internally, not through these symbols, so one call
// flushes once. execl, execlp and execle become execv, execvp and execve here; their
// arguments are gathered on the stack, as glibc's own execl does (never the allocator: a
// vfork() child shares the parent's heap, and exec may be called from a signal handler).
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdarg>
#include <cstddef>

#include "agent/agent_state.h"
#include "agent/exec_handoff.h"
#include "agent/raw_syscalls.h"
#include "agent/real_functions.h"

#define MEMTAP_HOOK extern "C" __attribute__((visibility("default")))

using namespace memtap;

namespace {

// Flushes (writing into `entry` the handoff for a new image, when given), runs `call`, and
// if it returns goes on recording, errno as it left it.
template <typename Call>
int around_flush(char* entry, size_t len, Call call) {
  const bool resume = agent_before_exec(entry, len);
  const int rc = call();
  if (resume) {
    const int error = errno;
    agent_after_failed_exec();
    errno = error;
  }
  return rc;
}

// For a call that closes the sender's descriptors: no new image, no handoff.
template <typename Call>
int flushed(Call call) {
  return around_flush(nullptr, 0, call);
}

// Runs `exec` with `envp` and `entry` after it, any handoff entry `envp` had left out: in
// memory from the kernel (an environment may hold thousands of entries, more than a
// thread's or a signal handler's stack should take), gone again if exec returns. With
// `envp` itself if there is no such memory.
template <typename Exec>
int exec_with_entry(char* const* envp, char* entry, Exec exec) {
  size_t n = 0;
  if (envp) {
    while (envp[n]) ++n;
  }
  const size_t bytes = (n + 2) * sizeof(char*);
  auto env = static_cast<char**>(raw_mmap_anon(bytes));
  if (!env) return exec(envp);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!is_exec_handoff_entry(envp[i])) env[k++] = envp[i];
  }
  env[k++] = entry;
  env[k] = nullptr;
  const int rc = exec(env);
  const int error = errno;
  raw_munmap(env, bytes);
  errno = error;
  return rc;
}

// An exec: runs `exec` with the environment to pass, `envp` and the entry that carries this
// instance's last word to the new image when the flush wrote one.
template <typename Exec>
int exec_flushed(char* const* envp, Exec exec) {
  char entry[kExecHandoffEntryBytes];
  return around_flush(entry, sizeof entry,
                      [&] { return entry[0] ? exec_with_entry(envp, entry, exec) : exec(envp); });
}

int real_execve(const char* path, char* const argv[], char* const envp[]) {
  if (auto real = real_function(g_real.execve)) return real(path, argv, envp);
  return int(syscall(SYS_execve, path, argv, envp));
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

// The list forms: `arg` and the list after it (read twice: `count`, then `fill`, two
// copies of it) as argv on this frame's stack, as large as glibc's own execl makes it,
// handed to `exec` with the environment after the list's null when `with_envp` (execle).
template <typename Exec>
int exec_list(const char* arg, va_list* count, va_list* fill, bool with_envp, Exec exec) {
  const ptrdiff_t argc = count_args(arg, count);
  if (argc < 0) {
    errno = E2BIG;
    return -1;
  }
  char* argv[argc + 1];
  argv[0] = const_cast<char*>(arg);
  for (ptrdiff_t i = 1; i <= argc; ++i) argv[i] = va_arg(*fill, char*);
  char* const* envp = with_envp ? va_arg(*fill, char* const*) : nullptr;
  return exec(argv, envp);
}

}  // namespace

MEMTAP_HOOK int execve(const char* path, char* const argv[], char* const envp[]) {
  return exec_flushed(envp, [&](char* const* env) { return real_execve(path, argv, env); });
}

// execv and execvp pass the program's environment: with the handoff entry added they become
// execve and execvpe, as glibc's own execv and execvp are.
MEMTAP_HOOK int execv(const char* path, char* const argv[]) {
  return exec_flushed(environ, [&](char* const* env) {
    if (env != environ) return real_execve(path, argv, env);
    auto real = real_function(g_real.execv);
    return real ? real(path, argv) : -1;
  });
}

MEMTAP_HOOK int execvp(const char* file, char* const argv[]) {
  return exec_flushed(environ, [&](char* const* env) {
    if (env != environ) {
      auto real = real_function(g_real.execvpe);
      return real ? real(file, argv, env) : -1;
    }
    auto real = real_function(g_real.execvp);
    return real ? real(file, argv) : -1;
  });
}

MEMTAP_HOOK int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return exec_flushed(envp, [&](char* const* env) {
    auto real = real_function(g_real.execvpe);
    return real ? real(file, argv, env) : -1;
  });
}

MEMTAP_HOOK int fexecve(int fd, char* const argv[], char* const envp[]) {
  return exec_flushed(envp, [&](char* const* env) {
    auto real = real_function(g_real.fexecve);
    return real ? real(fd, argv, env) : -1;
  });
}

MEMTAP_HOOK int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                         int flags) {
  return exec_flushed(envp, [&](char* const* env) {
    if (auto real = real_function(g_real.execveat)) return real(dirfd, path, argv, env, flags);
    return int(syscall(SYS_execveat, dirfd, path, argv, env, flags));
  });
}

MEMTAP_HOOK int execl(const char* path, const char* arg, ...) {
  va_list count, fill;
  va_start(count, arg);
  va_copy(fill, count);
  const int rc = exec_list(arg, &count, &fill, false,
                           [&](char** argv, char* const*) { return execv(path, argv); });
  va_end(fill);
  va_end(count);
  return rc;
}

MEMTAP_HOOK int execlp(const char* file, const char* arg, ...) {
  va_list count, fill;
  va_start(count, arg);
  va_copy(fill, count);
  const int rc = exec_list(arg, &count, &fill, false,
                           [&](char** argv, char* const*) { return execvp(file, argv); });
  va_end(fill);
  va_end(count);
  return rc;
}

MEMTAP_HOOK int execle(const char* path, const char* arg, ...) {
  va_list count, fill;
  va_start(count, arg);
  va_copy(fill, count);
  const int rc = exec_list(arg, &count, &fill, true, [&](char** argv, char* const* envp) {
    return execve(path, argv, envp);
  });
  va_end(fill);
  va_end(count);
  return rc;
}

MEMTAP_HOOK int close_range(unsigned int first, unsigned int last, int flags) {
  auto call = [&] {
    if (auto real = real_function(g_real.close_range)) return real(first, last, flags);
    return int(syscall(SYS_close_range, first, last, flags));
  };
  // Marked close-on-exec, nothing is closed now: the exec hook flushes when it comes.
  if (flags & CLOSE_RANGE_CLOEXEC) return call();
  return flushed(call);
}

MEMTAP_HOOK void closefrom(int lowfd) {
  flushed([&] {
    if (auto real = real_function(g_real.closefrom)) {
      real(lowfd);
    } else {
      syscall(SYS_close_range, unsigned(lowfd < 0 ? 0 : lowfd), ~0U, 0);
    }
    return 0;
  });
}

MEMTAP_HOOK int close(int fd) {
  auto call = [&] {
    if (auto real = real_function(g_real.close)) return real(fd);
    return int(syscall(SYS_close, fd));
  };
  if (__builtin_expect(!g_agent.sender_fds.holds(fd), 1)) return call();
  // One of ZeroMQ's: the sender steps out, and ZeroMQ closes its descriptors, this one with
  // them. Still open after, it was not the sender's to close (in a vfork() child the sender
  // is the parent's, and stays): closed here.
  int rc = 0;
  flushed([&] {
    if (syscall(SYS_fcntl, fd, F_GETFD) != -1) rc = call();
    return 0;
  });
  return rc;
}

// dup2 and dup3 close `to` first, when it is open: onto one of ZeroMQ's, the sender steps out
// as for close(), and the new descriptor takes the number once ZeroMQ has let it go.
template <typename Dup>
int dup_onto(int to, Dup dup) {
  if (__builtin_expect(!g_agent.sender_fds.holds(to), 1)) return dup();
  return flushed(dup);
}

MEMTAP_HOOK int dup2(int from, int to) {
  return dup_onto(to, [&] {
    if (auto real = real_function(g_real.dup2)) return real(from, to);
    // The kernel's dup3 refuses from == to, which dup2 answers with `to` if it is open.
    if (from == to) return syscall(SYS_fcntl, from, F_GETFD) == -1 ? -1 : to;
    return int(syscall(SYS_dup3, from, to, 0));
  });
}

MEMTAP_HOOK int dup3(int from, int to, int flags) {
  return dup_onto(to, [&] {
    if (auto real = real_function(g_real.dup3)) return real(from, to, flags);
    return int(syscall(SYS_dup3, from, to, flags));
  });
}
