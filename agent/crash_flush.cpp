// The final flush on a fatal signal; see crash_flush.h.
//
// On SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT the handler asks the sender thread
// for the final flush it does at exit (drain every buffer, the signalled thread's published
// records included, send, Bye, close with linger), waits for it on a futex up to
// MEMTAP_CRASH_FLUSH_MS, and then hands the signal on unchanged: to the handler that was
// there before ours, or to the default action, so the exit status and the core dump are
// those of the program alone. It touches only atomics and makes only async-signal-safe
// calls (raw syscalls, sigaction, pthread_sigmask, clock_gettime): no allocation, no lock
// the signalled thread might hold, no ZeroMQ; the sender's ZeroMQ and libc are private to
// its namespace, so a crash inside the program's malloc does not stop it. It does not wait
// on the sender thread itself, in a vfork() or fork() child that has not got a sender of
// its own, while not recording, or for a second fatal signal (on any thread) while the first
// one's flush runs or after exit's flush began.
//
// Limits, on purpose:
// - Not SIGINT nor SIGTERM, though a scheduler's SIGTERM ends many training runs. CPython
//   reads each disposition at start-up: over SIG_DFL it installs its KeyboardInterrupt
//   handler for SIGINT (ours there would turn Ctrl-C into a plain kill), and for a handler
//   it did not install signal.getsignal() answers None, which the common "save the old
//   handler, install ours, restore the old one" code then passes to signal.signal(), a
//   TypeError in the program. Taking them needs a sigaction/signal hook that shows the
//   program its own dispositions (issue 18 goes on there).
// - A signal ignored at start stays ignored; a handler installed before the agent (rare:
//   the agent's constructor runs before the program's) is chained.
// - A handler the program installs after start-up (sigaction, signal) replaces ours: that
//   signal then behaves as without memtap, with no flush. Python's faulthandler, which hands
//   the signal back to the previous handler (ours), keeps it.
// - The alternate stack that lets the handler run on a stack overflow is set up for the
//   main thread only (sigaltstack is per thread); an overflow on another thread dies
//   without a flush, as it would without memtap.
// - A program whose runtime checks for SIG_DFL before installing its own fault handler
//   (Rust's stack-overflow message) finds ours and leaves it: the overflow then ends by
//   SIGSEGV without that message.
#include "agent/crash_flush.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "agent/agent_state.h"
#include "agent/raw_syscalls.h"
#include "common/clock.h"

namespace memtap {

CrashFlushWords g_crash_flush;

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr size_t kAltStackBytes = size_t{64} << 10;
constexpr size_t kGuardBytes = 4096;

// Written at install time, before the handlers, and only read after: the dispositions we
// replaced, by signal number.
struct sigaction g_previous[_NSIG];
uint32_t g_deadline_ms = 0;
std::atomic<uint32_t> g_sender_tid{0};

bool is_function(const struct sigaction& a) {
  return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

// Whether this signal may wait for the flush; claims it if so.
bool claim_flush() {
  // A vfork() child shares our memory, and a fork() child has the parent's until its own
  // sender starts: neither may touch the parent's sender or its flags.
  if (g_agent.registry.pid == 0 || raw_getpid() != g_agent.registry.pid) return false;
  if (!g_agent.sender_stop || !g_agent.recording.load(std::memory_order_relaxed)) return false;
  if (raw_gettid() == g_sender_tid.load(std::memory_order_relaxed)) return false;
  // The first fatal signal flushes; exit's flush, once begun, is not asked twice.
  return !g_agent.stopped.exchange(true);
}

void flush_and_wait(int sig) {
  g_crash_flush.signal.store(sig, std::memory_order_relaxed);
  g_crash_flush.requested.store(1, std::memory_order_release);
  raw_futex_wake_all(&g_crash_flush.requested);
  const uint64_t deadline = monotonic_ns() + uint64_t(g_deadline_ms) * 1000000u;
  while (g_crash_flush.done.load(std::memory_order_acquire) == 0) {
    const uint64_t now = monotonic_ns();
    if (now >= deadline) break;
    raw_futex_wait(&g_crash_flush.done, 0, deadline - now);
  }
  // Nothing drains the buffers any more, whatever the program does next.
  g_agent.recording.store(false, std::memory_order_relaxed);
}

void set_default(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

void hand_on(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[sig];
  if (is_function(prev)) {
    // As the kernel would have called it: reset first with SA_RESETHAND, its mask added,
    // the signal itself blocked unless SA_NODEFER.
    if (prev.sa_flags & SA_RESETHAND) set_default(sig);
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &prev.sa_mask, &old);
    if (prev.sa_flags & SA_NODEFER) {
      sigset_t self;
      sigemptyset(&self);
      sigaddset(&self, sig);
      pthread_sigmask(SIG_UNBLOCK, &self, nullptr);
    }
    if (prev.sa_flags & SA_SIGINFO) {
      prev.sa_sigaction(sig, info, context);
    } else {
      prev.sa_handler(sig);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return;
  }
  // The default action. The signal, queued again with its own siginfo, stays blocked until
  // this handler returns to where it interrupted: it then ends the process there, with the
  // status and core dump it would have had (a fault's registers are the faulting ones).
  set_default(sig);
  raw_requeue_signal(sig, info);
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (claim_flush()) flush_and_wait(sig);
  hand_on(sig, info, context);
  errno = saved_errno;
}

// For a SIGSEGV from a stack overflow, which has no stack left to run the handler on. The
// calling (main) thread's only, and only if the program has not set one.
void set_up_alt_stack() {
  stack_t old;
  if (sigaltstack(nullptr, &old) != 0 || !(old.ss_flags & SS_DISABLE)) return;
  auto* mem = static_cast<char*>(raw_mmap_anon(kGuardBytes + kAltStackBytes));
  if (!mem) return;
  syscall(SYS_mprotect, mem, kGuardBytes, PROT_NONE);  // an overrun faults, not corrupts
  stack_t st{};
  st.ss_sp = mem + kGuardBytes;
  st.ss_size = kAltStackBytes;
  sigaltstack(&st, nullptr);
}

}  // namespace

void crash_flush_install(uint32_t deadline_ms) {
  if (deadline_ms == 0) return;
  g_deadline_ms = deadline_ms;
  set_up_alt_stack();
  for (int sig : kSignals) {
    struct sigaction prev;
    if (sigaction(sig, nullptr, &prev) != 0 || prev.sa_handler == SIG_IGN) continue;
    g_previous[sig] = prev;
    struct sigaction ours {};
    ours.sa_sigaction = on_fatal_signal;
    sigemptyset(&ours.sa_mask);
    // SA_ONSTACK: on the alternate stack where the thread has one (harmless where not).
    // SA_RESTART as the handler we chain would have had it.
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (prev.sa_flags & SA_RESTART);
    sigaction(sig, &ours, nullptr);
  }
}

void crash_flush_set_sender_thread(uint32_t tid) {
  g_sender_tid.store(tid, std::memory_order_relaxed);
}

void crash_flush_after_fork_child() {
  g_crash_flush.requested.store(0, std::memory_order_relaxed);
  g_crash_flush.signal.store(0, std::memory_order_relaxed);
  g_crash_flush.done.store(0, std::memory_order_relaxed);
  g_sender_tid.store(0, std::memory_order_relaxed);
}

}  // namespace memtap
