// The program's own signal dispositions; see signal_dispositions.h.
//
// A program may change a disposition from a signal handler and from several threads at
// once, and the agent's handler reads it on any thread, so each signal's entry is a
// seqlock: readers retry, never wait on a lock, never allocate. Writers (the hooks, and
// SA_RESETHAND in the handler) take a per-signal lock with every signal blocked, so a
// handler cannot interrupt a writer on its own thread, and hold it across the kernel's
// sigaction, so the kernel's disposition and the table change in the same order. The
// lock records its holder's thread id: a fork() child inherits the memory of a writer
// that does not exist in it, and takes such a lock over.
//
// What the table holds is what the kernel would: the mask without SIGKILL and SIGSTOP,
// only the flags it knows, SA_RESTORER and the restorer libc adds, and on SA_RESETHAND
// only the handler reset. A query answers with the kernel's disposition when it is not the
// agent's handler (libc's own internal sigaction calls, in abort(), system() or
// siginterrupt(), bypass the hooks): the kernel then has the program's last word.
#include "agent/signal_dispositions.h"

#include <pthread.h>

#include <atomic>
#include <cstring>

#include "agent/agent_state.h"
#include "agent/raw_syscalls.h"
#include "agent/real_functions.h"

namespace memtap {

namespace {

// The flags a kernel stores (it drops the others since Linux 5.11).
constexpr int kKernelFlags =
    SA_NOCLDSTOP | SA_NOCLDWAIT | SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER | SA_RESETHAND;

struct Entry {
  std::atomic<uint32_t> seq{0};     // odd while a writer changes the fields
  std::atomic<uint32_t> writer{0};  // the thread holding the lock, 0 if none
  std::atomic<uintptr_t> handler{0};
  std::atomic<uint64_t> mask{0};
  std::atomic<int> flags{0};
  std::atomic<uintptr_t> restorer{0};
};

Entry g_entries[_NSIG];
std::atomic<bool> g_taken[_NSIG];
std::atomic<AgentSignalHandler> g_agent_handler{nullptr};
// What libc's sigaction adds to every disposition it sets, learnt from the first one we
// set: SA_RESTORER and its return trampoline on x86-64. Written before any g_taken.
int g_libc_flags = 0;
void (*g_libc_restorer)(void) = nullptr;

uint64_t kernel_mask(const sigset_t& set) {
  uint64_t mask;
  memcpy(&mask, &set, sizeof mask);
  return mask & ~((uint64_t{1} << (SIGKILL - 1)) | (uint64_t{1} << (SIGSTOP - 1)));
}

// As libc fills an oact: the signal set's words past the kernel's are left alone.
void fill(const Disposition& d, struct sigaction* out) {
  out->sa_handler = reinterpret_cast<sighandler_t>(d.handler);
  memcpy(&out->sa_mask, &d.mask, sizeof d.mask);
  out->sa_flags = d.flags;
  out->sa_restorer = d.restorer;
}

Disposition from_kernel(const struct sigaction& a) {
  return {reinterpret_cast<void*>(a.sa_handler), kernel_mask(a.sa_mask), a.sa_flags, a.sa_restorer};
}

// What the kernel would store for a disposition the program sets through libc.
Disposition from_program(const struct sigaction& a) {
  return {reinterpret_cast<void*>(a.sa_handler), kernel_mask(a.sa_mask),
          (a.sa_flags & kKernelFlags) | g_libc_flags, g_libc_restorer};
}

Disposition load(const Entry& e) {
  return {reinterpret_cast<void*>(e.handler.load(std::memory_order_relaxed)),
          e.mask.load(std::memory_order_relaxed), e.flags.load(std::memory_order_relaxed),
          reinterpret_cast<void (*)(void)>(e.restorer.load(std::memory_order_relaxed))};
}

// Under the entry's lock.
void store(Entry& e, const Disposition& d) {
  const uint32_t seq = e.seq.load(std::memory_order_relaxed);
  e.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  e.handler.store(reinterpret_cast<uintptr_t>(d.handler), std::memory_order_relaxed);
  e.mask.store(d.mask, std::memory_order_relaxed);
  e.flags.store(d.flags, std::memory_order_relaxed);
  e.restorer.store(reinterpret_cast<uintptr_t>(d.restorer), std::memory_order_relaxed);
  e.seq.store(seq + 2, std::memory_order_release);
}

// The per-signal writer lock, with every signal blocked while it is held.
class WriteScope {
 public:
  explicit WriteScope(Entry& e) : e_(e) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_mask_);
    const uint32_t me = raw_gettid();
    for (;;) {
      uint32_t holder = 0;
      if (e_.writer.compare_exchange_weak(holder, me, std::memory_order_acquire)) break;
      // A writer of the parent's, in a fork() child: it never comes back.
      if (holder != 0 && !raw_thread_alive(raw_getpid(), holder) &&
          e_.writer.compare_exchange_strong(holder, me, std::memory_order_acquire)) {
        break;
      }
      raw_yield();
    }
    // That writer may have stopped half-way: what it left is taken as it is.
    const uint32_t seq = e_.seq.load(std::memory_order_relaxed);
    if (seq & 1) e_.seq.store(seq + 1, std::memory_order_release);
  }
  ~WriteScope() {
    e_.writer.store(0, std::memory_order_release);
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  WriteScope(const WriteScope&) = delete;
  WriteScope& operator=(const WriteScope&) = delete;

 private:
  Entry& e_;
  sigset_t old_mask_;
};

// The kernel's disposition for the program's own: the agent's handler, with the program's
// mask and flags so that the kernel blocks and restarts as it would for the program's
// handler; SIG_IGN as it is, so that the kernel discards the signal and an exec() keeps
// it ignored. SA_RESETHAND is done by the agent's handler, which must stay.
int install(int sig, const Disposition& own) {
  struct sigaction k;
  memset(&k, 0, sizeof k);
  memcpy(&k.sa_mask, &own.mask, sizeof own.mask);
  if (own.handler == reinterpret_cast<void*>(SIG_IGN)) {
    k.sa_handler = SIG_IGN;
    k.sa_flags = own.flags & kKernelFlags;
  } else if (is_function(own.handler)) {
    k.sa_sigaction = g_agent_handler.load(std::memory_order_relaxed);
    k.sa_flags = SA_SIGINFO | (own.flags & (SA_RESTART | SA_NODEFER | SA_ONSTACK));
  } else {
    // SIG_DFL: the handler flushes and ends the process. On the alternate stack where
    // there is one, for a stack overflow.
    sigemptyset(&k.sa_mask);
    k.sa_sigaction = g_agent_handler.load(std::memory_order_relaxed);
    k.sa_flags = SA_SIGINFO | SA_ONSTACK;
  }
  return real_sigaction(sig, &k, nullptr);
}

}  // namespace

int real_sigaction(int sig, const struct sigaction* act, struct sigaction* oact) {
  if (!g_real.sigaction && !resolve_real_functions()) {
    errno = ENOSYS;  // only while this thread is inside dlsym, which sets no disposition
    return -1;
  }
  return g_real.sigaction(sig, act, oact);
}

void take_signal(int sig, AgentSignalHandler handler) {
  g_agent_handler.store(handler, std::memory_order_relaxed);
  Entry& e = g_entries[sig];
  WriteScope lock(e);
  struct sigaction current;
  memset(&current, 0, sizeof current);
  if (real_sigaction(sig, nullptr, &current) != 0 || current.sa_sigaction == handler) return;
  const Disposition own = from_kernel(current);
  store(e, own);
  if (install(sig, own) != 0) return;
  if (!g_libc_restorer) {
    struct sigaction set;
    if (real_sigaction(sig, nullptr, &set) == 0) {
      g_libc_flags = set.sa_flags & ~kKernelFlags;
      g_libc_restorer = set.sa_restorer;
    }
  }
  g_taken[sig].store(true, std::memory_order_release);
}

bool signal_taken(int sig) {
  if (sig <= 0 || sig >= _NSIG || !g_taken[sig].load(std::memory_order_acquire)) return false;
  return raw_getpid() == g_agent.registry.pid;
}

int own_sigaction(int sig, const struct sigaction* act, struct sigaction* oact) {
  Entry& e = g_entries[sig];
  const AgentSignalHandler agent = g_agent_handler.load(std::memory_order_relaxed);
  Disposition answer;
  {
    WriteScope lock(e);
    struct sigaction kernel;
    memset(&kernel, 0, sizeof kernel);
    if (real_sigaction(sig, nullptr, &kernel) != 0) return -1;
    const Disposition own = load(e);
    answer = kernel.sa_sigaction == agent ? own : from_kernel(kernel);
    if (act) {
      Disposition next = from_program(*act);
      // Our own handler, found some way past the hooks, would call itself: it stays ours.
      if (next.handler == reinterpret_cast<void*>(agent)) next = own;
      store(e, next);
      if (install(sig, next) != 0) {
        const int error = errno;
        store(e, own);
        errno = error;
        return -1;
      }
    }
  }
  if (oact) fill(answer, oact);
  return 0;
}

Disposition own_disposition(int sig) {
  const Entry& e = g_entries[sig];
  for (;;) {
    const uint32_t seq = e.seq.load(std::memory_order_acquire);
    if (seq & 1) {
      // A writer on another thread, for a few stores; or one a fork() left behind, whose
      // lock the next writer takes over: take it to settle the entry.
      const uint32_t holder = e.writer.load(std::memory_order_relaxed);
      if (holder != 0 && !raw_thread_alive(raw_getpid(), holder)) {
        WriteScope settle(g_entries[sig]);
      } else {
        raw_yield();
      }
      continue;
    }
    const Disposition d = load(e);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.seq.load(std::memory_order_relaxed) == seq) return d;
  }
}

void reset_own_disposition(int sig, void* handler) {
  Entry& e = g_entries[sig];
  WriteScope lock(e);
  Disposition own = load(e);
  if (own.handler != handler || !(own.flags & SA_RESETHAND)) return;
  own.handler = reinterpret_cast<void*>(SIG_DFL);
  store(e, own);
  install(sig, own);
}

}  // namespace memtap
