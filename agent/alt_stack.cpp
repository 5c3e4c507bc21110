// Per-thread alternate signal stacks; see alt_stack.h.
//
// Each is 64 KiB with a PROT_NONE guard page below it (an overrun faults instead of writing
// over whatever lies there), mapped straight from the kernel: never the hooked allocator,
// whose lock the faulting thread may hold. It costs a thread four system calls when it
// first records (query, mmap, mprotect, set) and three at its exit (query, disable,
// munmap); its pages are touched only by a handler that runs on it. A thread whose alternate
// stack the program (or a library: Rust's runtime, sanitizers) set before its first record
// keeps it, since we query first. One the program sets later replaces ours as it would
// replace any; ours is then unmapped at the thread's exit all the same, since the kernel no
// longer holds it.
//
// A vfork() child runs on its parent's thread, in its memory: what it sets up here is the
// child's in the kernel and the parent thread's in memory; the parent thread then has none
// (the kernel's is the child's), and its exit unmaps the memory as for one the program
// replaced.
#include "agent/alt_stack.h"

#include <signal.h>

#include <atomic>

#include "agent/raw_syscalls.h"

namespace memtap {

namespace {

constexpr size_t kAltStackBytes = size_t{64} << 10;
constexpr size_t kGuardBytes = 4096;

std::atomic<bool> g_enabled{false};

// The mapping (guard page first) while this thread has one from us.
__thread char* tl_alt_stack __attribute__((tls_model("initial-exec"))) = nullptr;
// Looked at once: a thread that attaches again at its exit (another key's destructor
// allocating, after ours gave its stack back) gets no second one.
__thread bool tl_alt_stack_done __attribute__((tls_model("initial-exec"))) = false;

}  // namespace

void alt_stacks_enable() {
  g_enabled.store(true, std::memory_order_relaxed);
  alt_stack_for_this_thread();
}

void alt_stack_for_this_thread() {
  if (!g_enabled.load(std::memory_order_relaxed) || tl_alt_stack_done) return;
  tl_alt_stack_done = true;
  stack_t old;
  if (sigaltstack(nullptr, &old) != 0 || !(old.ss_flags & SS_DISABLE)) return;
  auto* mem = static_cast<char*>(raw_mmap_anon(kGuardBytes + kAltStackBytes));
  if (!mem) return;
  syscall(SYS_mprotect, mem, kGuardBytes, PROT_NONE);
  stack_t st{};
  st.ss_sp = mem + kGuardBytes;
  st.ss_size = kAltStackBytes;
  if (sigaltstack(&st, nullptr) != 0) {
    raw_munmap(mem, kGuardBytes + kAltStackBytes);
    return;
  }
  tl_alt_stack = mem;
}

void alt_stack_release_at_thread_exit() {
  char* mem = tl_alt_stack;
  if (!mem) return;
  stack_t now;
  if (sigaltstack(nullptr, &now) != 0) return;
  if (!(now.ss_flags & SS_DISABLE) && now.ss_sp == mem + kGuardBytes) {
    // A thread that exits from a handler running on it (pthread_exit there) keeps it.
    if (now.ss_flags & SS_ONSTACK) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    if (sigaltstack(&off, nullptr) != 0) return;
  }
  tl_alt_stack = nullptr;
  raw_munmap(mem, kGuardBytes + kAltStackBytes);
}

}  // namespace memtap
