// The final flush on a fatal signal; see crash_flush.h.
//
// The agent's handler stands in for the program's disposition of SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGABRT, SIGTERM and SIGINT from start-up on; the program sees, sets and gets
// called through its own (agent/signal_dispositions.h, agent/hooks/signal_hooks.cpp). On a
// signal the handler does what the kernel would have done with that disposition:
// - the program's handler: calls it as the kernel would (its mask and SA_NODEFER are in the
//   kernel's disposition, SA_SIGINFO and SA_RESETHAND are done here), without a flush: the
//   program may recover; if it then exits, exit's flush runs, and if it re-raises with
//   SIG_DFL, the next delivery flushes.
// - SIG_IGN: that is in the kernel, which discards the signal (and ends the process on an
//   ignored fault, and keeps it ignored across exec), so only a change racing with a
//   delivery gets here.
// - SIG_DFL (every one of these signals then ends the process): asks the sender thread for
//   the final flush it does at exit (drain every buffer, the signalled thread's published
//   records included, send, Bye, close with linger), waits for it on a futex up to
//   MEMTAP_CRASH_FLUSH_MS, and then takes the default action, so the exit status and the
//   core dump are those of the program alone.
// It touches only atomics and makes only async-signal-safe calls (raw syscalls, sigaction,
// pthread_sigmask, clock_gettime): no allocation, no lock the signalled thread might hold,
// no ZeroMQ; the sender's ZeroMQ and libc are private to its namespace, so a crash inside
// the program's malloc does not stop it. It does not flush on the sender thread itself
// (which blocks the process-directed signals, so a kill goes to a program thread), in a
// vfork() or fork() child that has not got a sender of its own, or while not recording. A
// signal that comes while another flush runs (a first signal's, or exit's, on another
// thread) waits for that flush to finish before the default action, and exit waits likewise
// for a signal's flush (final_flush_begin and kin): neither cuts the other short.
//
// Limits, on purpose:
// - What bypasses libc's exported functions bypasses us: the raw rt_sigaction syscall (Go's
//   runtime, a statically linked program), and libc's internal calls. Among those, abort()
//   whose SIGABRT handler returns resets SIGABRT itself and raises it again: that one ends
//   the process without a flush. A query after such a change answers with what the kernel
//   has, so the program still reads back its own last word.
// - The program's own handler runs on the stack it asked for: a stack overflow with a
//   handler installed without SA_ONSTACK dies as it would without memtap, unflushed.
// - A stack overflow is flushed on a thread with an alternate stack (agent/alt_stack.h): each
//   thread gets one when it first records. An overflow on a thread that has recorded
//   nothing yet, or that took its first record before the agent's start-up (another
//   library's constructor), dies without a flush, as it would without memtap.
// - A siginterrupt() made before the agent started (in another library's constructor) is
//   not known to a later signal() of one of these signals, which then restarts system calls:
//   glibc keeps that set to itself.
#include "agent/crash_flush.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>

#include "agent/agent_state.h"
#include "agent/alt_stack.h"
#include "agent/raw_syscalls.h"
#include "agent/signal_dispositions.h"
#include "common/clock.h"

namespace memtap {

CrashFlushWords g_crash_flush;

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};

uint32_t g_deadline_ms = 0;
std::atomic<uint32_t> g_sender_tid{0};
// The thread that runs the final flush (0: none yet), and whether it has finished (a futex
// word).
std::atomic<uint32_t> g_final_tid{0};
std::atomic<uint32_t> g_final_done{0};
// When the flush under way that is not a signal's (exit's, an exec's) will have ended by its
// own limit (monotonic ns; 0: none under way).
std::atomic<uint64_t> g_flush_limit_ns{0};

// Whether this signal may wait for the flush; claims it if so.
bool claim_flush() {
  // A vfork() child shares our memory, and a fork() child has the parent's until its own
  // sender starts: neither may touch the parent's sender or its flags.
  if (g_agent.registry.pid == 0 || raw_getpid() != g_agent.registry.pid) return false;
  if (!g_agent.sender_stop || !g_agent.recording.load(std::memory_order_relaxed)) return false;
  // Before an exec, flushed: what the signal would flush is sent, and the sender stopped.
  if (g_agent.exec_flushed.load(std::memory_order_acquire)) return false;
  if (raw_gettid() == g_sender_tid.load(std::memory_order_relaxed)) return false;
  // The first fatal signal flushes; exit's flush, once begun, is not asked twice.
  return !g_agent.stopped.exchange(true);
}

// How long a fatal signal waits for its own flush (MEMTAP_CRASH_FLUSH_MS), in ns.
uint64_t own_wait_ns() {
  return uint64_t(g_deadline_ms) * 1000000u;
}

// When a wait that begins now would end by its own deadline (monotonic ns).
uint64_t own_deadline_from_now() {
  return monotonic_ns() + own_wait_ns();
}

// The deadline a fatal signal may wait by: its own, or, while an exit's or an exec's flush
// runs, that flush's limit and its own again.
uint64_t wait_deadline(uint64_t own_deadline) {
  const uint64_t limit = g_flush_limit_ns.load(std::memory_order_acquire);
  return limit == 0 ? own_deadline : std::max(own_deadline, limit + own_wait_ns());
}

// Until `word` is no longer 0, or wait_deadline has passed. The limit is read anew after
// each wake (its setters wake the waiters).
void wait_until_set(std::atomic<uint32_t>* word, uint64_t own_deadline) {
  while (word->load(std::memory_order_acquire) == 0) {
    const uint64_t deadline = wait_deadline(own_deadline);
    const uint64_t now = monotonic_ns();
    if (now >= deadline) break;
    raw_futex_wait(word, 0, deadline - now);
  }
}

void set_flush_limit(uint32_t limit_ms) {
  g_flush_limit_ns.store(limit_ms == 0 ? 0 : monotonic_ns() + uint64_t(limit_ms) * 1000000u,
                         std::memory_order_release);
}

void flush_and_wait(int sig) {
  g_crash_flush.signal.store(sig, std::memory_order_relaxed);
  // The flush is told the very deadline this wait keeps (crash_flush in the sender): during
  // an exec's flush, that flush's limit. A sender thread the exec was still joining (the
  // catch-up thread, pacing itself) took the request and flushed by the signal's own
  // deadline instead: with MEMTAP_CRASH_FLUSH_MS=1, 1 ms, and the process died with its last
  // events unsent, no Bye, and nothing counted as dropped.
  const uint64_t deadline = own_deadline_from_now();
  g_crash_flush.deadline_ns.store(wait_deadline(deadline), std::memory_order_relaxed);
  // Sequentially consistent, with exec_flushed after it, against the exec-ing thread's
  // store of exec_flushed and its load of `requested` (wait_for_a_fatal_signal_before_exec):
  // one of the two sees the other. The exec flush, done already, is the flush asked for.
  g_crash_flush.requested.store(1, std::memory_order_seq_cst);
  raw_futex_wake_all(&g_crash_flush.requested);
  if (!g_agent.exec_flushed.load(std::memory_order_seq_cst)) {
    wait_until_set(&g_crash_flush.done, deadline);
  }
  // Nothing drains the buffers any more, whatever the program does next.
  g_agent.recording.store(false, std::memory_order_relaxed);
}

// As the kernel calls a handler. The kernel has already blocked the program's mask (and the
// signal, unless SA_NODEFER) and chosen its stack, from the flags we mirror; SA_RESETHAND
// is left to us.
void call_program_handler(int sig, const Disposition& own, siginfo_t* info, void* context) {
  if (own.flags & SA_RESETHAND) reset_own_disposition(sig, own.handler);
  if (own.flags & SA_SIGINFO) {
    reinterpret_cast<AgentSignalHandler>(own.handler)(sig, info, context);
  } else {
    reinterpret_cast<void (*)(int)>(own.handler)(sig);
  }
}

// A fault the kernel raised (not one sent with kill or raise) cannot be ignored: with SIG_IGN
// it takes the default action.
bool forced_by_kernel(int sig, const siginfo_t* info) {
  return (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info &&
         info->si_code > 0;
}

// The default action. The signal, queued again with its own siginfo, stays blocked until
// this handler returns to where it interrupted: it then ends the process there, with the
// status and core dump it would have had (a fault's registers are the faulting ones).
// Once an exec has flushed, it may replace the image before this handler returns, and end
// this thread, and a signal queued for it, with it: the program then ran on as the new
// image (a SIGTERM during the exec flush, now and then in the tests). Queued for the
// process, the signal ends it before the exec, or stays pending across it and ends the new
// image, as the kernel would have ended the old one. A fault stays with its thread.
void default_action(int sig, siginfo_t* info) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  real_sigaction(sig, &dfl, nullptr);
  if (g_agent.exec_flushed.load(std::memory_order_seq_cst) && !forced_by_kernel(sig, info)) {
    raw_requeue_signal_to_process(sig, info);
  } else {
    raw_requeue_signal(sig, info);
  }
}

// The kernel's disposition of every taken signal but SIG_IGN: it does what the kernel would
// have done with the program's own.
void on_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const Disposition own = own_disposition(sig);
  if (is_function(own.handler) && own.handler != reinterpret_cast<void*>(on_signal)) {
    // No flush: the program may recover. If it ends by exit(), exit's flush runs; if it
    // re-raises with SIG_DFL, the next delivery flushes.
    errno = saved_errno;
    call_program_handler(sig, own, info, context);
    return;
  }
  // SIG_IGN is in the kernel, so this is a change racing with the signal.
  if (own.handler == reinterpret_cast<void*>(SIG_IGN) && !forced_by_kernel(sig, info)) {
    errno = saved_errno;
    return;
  }
  // Every signal we take ends the process by default.
  if (claim_flush()) {
    final_flush_begin(0);
    flush_and_wait(sig);
    final_flush_end();
  } else {
    wait_for_final_flush();
  }
  default_action(sig, info);
  errno = saved_errno;
}

}  // namespace

void crash_flush_install(uint32_t deadline_ms) {
  if (deadline_ms == 0) return;
  g_deadline_ms = deadline_ms;
  // For a SIGSEGV from a stack overflow, which has no stack left to run the handler on.
  alt_stacks_enable();
  for (int sig : kSignals) take_signal(sig, on_signal);
}

void crash_flush_set_sender_thread(uint32_t tid) {
  g_sender_tid.store(tid, std::memory_order_relaxed);
}

void final_flush_begin(uint32_t limit_ms) {
  g_final_tid.store(raw_gettid(), std::memory_order_release);
  // A signal's (0) leaves the limit of an exec's flush under way, which it waits for.
  if (limit_ms == 0) return;
  set_flush_limit(limit_ms);
  // A signal on another thread may be waiting already, by its own deadline alone.
  raw_futex_wake_all(&g_final_done);
}

void final_flush_end() {
  g_final_done.store(1, std::memory_order_release);
  raw_futex_wake_all(&g_final_done);
}

void wait_for_final_flush() {
  // A vfork() child shares our memory: the flush it would wait for is not its process's.
  if (g_agent.registry.pid == 0 || raw_getpid() != g_agent.registry.pid) return;
  // No final flush claimed (not recording, say): nothing to wait for. Once claimed, its
  // thread is named at once, so an unnamed one is another thread's about to begin.
  if (!g_agent.stopped.load(std::memory_order_acquire)) return;
  if (g_final_tid.load(std::memory_order_acquire) == raw_gettid()) return;
  if (raw_gettid() == g_sender_tid.load(std::memory_order_relaxed)) return;
  wait_until_set(&g_final_done, own_deadline_from_now());
}

void wait_for_a_fatal_signal_before_exec(bool exec_flushed) {
  if (g_crash_flush.requested.load(std::memory_order_seq_cst) == 0) return;
  if (exec_flushed) {
    g_crash_flush.done.store(1, std::memory_order_release);
    raw_futex_wake_all(&g_crash_flush.done);
  }
  wait_until_set(&g_final_done, own_deadline_from_now());
  // The handler ends the process now (default_action); this thread sleeps through it.
  raw_sleep_ns(own_wait_ns());
}

void exec_flush_begin(uint32_t limit_ms) {
  set_flush_limit(limit_ms);
  // A signal's handler waits on `done` for the flush it asked for, which this one is.
  raw_futex_wake_all(&g_crash_flush.done);
}

void exec_flush_end() {
  set_flush_limit(0);
  raw_futex_wake_all(&g_crash_flush.done);
}

void crash_flush_after_fork_child() {
  g_flush_limit_ns.store(0, std::memory_order_relaxed);
  g_final_tid.store(0, std::memory_order_relaxed);
  g_final_done.store(0, std::memory_order_relaxed);
  g_crash_flush.requested.store(0, std::memory_order_relaxed);
  g_crash_flush.signal.store(0, std::memory_order_relaxed);
  g_crash_flush.deadline_ns.store(0, std::memory_order_relaxed);
  g_crash_flush.done.store(0, std::memory_order_relaxed);
  g_sender_tid.store(0, std::memory_order_relaxed);
}

}  // namespace memtap
