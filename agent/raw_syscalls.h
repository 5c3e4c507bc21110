// Memory and thread syscalls made directly, bypassing libc's symbols.
//
// Inside the preloaded agent a plain call to mmap/munmap would resolve to our own hooks
// (we export those names), and libc's internal paths may take locks. The agent's own
// memory therefore comes straight from the kernel.
#pragma once

#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memtap {

inline void* raw_mmap_anon(size_t len, int extra_flags = 0) {
  long r = syscall(SYS_mmap, nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  return (r < 0 && r > -4096) ? nullptr : reinterpret_cast<void*>(r);
}

inline void raw_munmap(void* p, size_t len) {
  syscall(SYS_munmap, p, len);
}

inline uint32_t raw_gettid() {
  return uint32_t(syscall(SYS_gettid));
}

inline uint32_t raw_getpid() {
  return uint32_t(syscall(SYS_getpid));
}

// True while thread `tid` of process `pid` exists.
inline bool raw_thread_alive(uint32_t pid, uint32_t tid) {
  return syscall(SYS_tgkill, pid, tid, 0) == 0;
}

inline void raw_yield() {
  syscall(SYS_sched_yield);
}

inline void raw_sleep_ns(uint64_t ns) {
  timespec ts{time_t(ns / 1000000000u), long(ns % 1000000000u)};
  syscall(SYS_nanosleep, &ts, nullptr);
}

// Futexes on a word both sides of the agent see (the sender waits on its drain interval,
// a crash handler on the sender's final flush). Async-signal-safe. The waits may return
// early (a signal, a spurious wake): callers re-check their condition.
inline void raw_futex_wait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) {
  timespec ts{time_t(timeout_ns / 1000000000u), long(timeout_ns % 1000000000u)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr,
          0);
}

inline void raw_futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

// Queues `sig` for this thread with the siginfo it first came with, so that the default
// action (a core dump's siginfo included) sees the original; a plain tgkill if the kernel
// refuses that.
inline void raw_requeue_signal(int sig, const siginfo_t* info) {
  uint32_t pid = raw_getpid(), tid = raw_gettid();
  if (!info || syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, info) != 0) {
    syscall(SYS_tgkill, pid, tid, sig);
  }
}

// As raw_requeue_signal, for the whole process: pending there, it outlives this thread, and
// an exec keeps it for the new image.
inline void raw_requeue_signal_to_process(int sig, const siginfo_t* info) {
  uint32_t pid = raw_getpid();
  if (!info || syscall(SYS_rt_sigqueueinfo, pid, sig, info) != 0) syscall(SYS_kill, pid, sig);
}

}  // namespace memtap
