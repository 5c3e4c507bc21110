// Memory and thread syscalls made directly, bypassing libc's symbols.
//
// Inside the preloaded agent a plain call to mmap/munmap would resolve to our own hooks
// (we export those names), and libc's internal paths may take locks. The agent's own
// memory therefore comes straight from the kernel.
#pragma once

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

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

}  // namespace memtap
