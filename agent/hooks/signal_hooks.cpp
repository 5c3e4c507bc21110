// Hooks for the functions that set or ask a signal's disposition: sigaction, signal (and
// its names bsd_signal, ssignal), sysv_signal (__sysv_signal: signal() for a program built
// with -std=c99 and the like), sigset, sigignore and siginterrupt.
//
// For a signal the agent's handler stands in for (agent/signal_dispositions.h) they act on
// the program's own disposition, so that it reads back what it set: CPython reads each
// disposition at start-up, and its signal.getsignal() answers None for a handler it did not
// install. Every other signal, and every signal when the agent took none (disabled, no
// sender, MEMTAP_CRASH_FLUSH_MS=0), goes straight to libc. Each entry point needs its own
// hook: glibc's signal() and the rest call its internal __sigaction, not the exported
// sigaction. For a taken signal they do what glibc 2.36 does (sysdeps/posix/*.c) over our
// sigaction.
#include <errno.h>
#include <signal.h>

#include <atomic>
#include <cstdint>

#include "agent/real_functions.h"
#include "agent/signal_dispositions.h"

#define MEMTAP_HOOK extern "C" __attribute__((visibility("default")))

using namespace memtap;

namespace {

// siginterrupt()'s choice for the taken signals, bit sig - 1, which signal() reads (glibc's
// own set is not ours to read or write).
std::atomic<uint64_t> g_interrupting{0};

uint64_t bit(int sig) {
  return uint64_t{1} << (sig - 1);
}

// signal() and its relatives, on a taken signal: `flags` and `mask` as glibc sets them.
sighandler_t set_handler(int sig, sighandler_t handler, int flags, bool mask_self) {
  if (handler == SIG_ERR) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction act {
  }, old{};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  if (mask_self) sigaddset(&act.sa_mask, sig);
  act.sa_flags = flags;
  if (own_sigaction(sig, &act, &old) < 0) return SIG_ERR;
  return old.sa_handler;
}

// BSD semantics: the handler stays, the signal is blocked while it runs, and interrupted
// system calls restart unless siginterrupt() said otherwise.
sighandler_t bsd_signal_hook(int sig, sighandler_t handler) {
  if (!signal_taken(sig))
    return real_function(g_real.signal) ? g_real.signal(sig, handler) : SIG_ERR;
  const bool interrupting = g_interrupting.load(std::memory_order_relaxed) & bit(sig);
  return set_handler(sig, handler, interrupting ? 0 : SA_RESTART, true);
}

// System V semantics: reset to SIG_DFL on delivery, not blocked while it runs, no restart.
sighandler_t sysv_signal_hook(int sig, sighandler_t handler) {
  if (!signal_taken(sig))
    return real_function(g_real.sysv_signal) ? g_real.sysv_signal(sig, handler) : SIG_ERR;
  return set_handler(sig, handler, (SA_RESETHAND | SA_NODEFER | SA_INTERRUPT) & ~SA_RESTART, false);
}

}  // namespace

MEMTAP_HOOK int sigaction(int sig, const struct sigaction* act, struct sigaction* oact) {
  if (!signal_taken(sig)) return real_sigaction(sig, act, oact);
  return own_sigaction(sig, act, oact);
}

MEMTAP_HOOK sighandler_t signal(int sig, sighandler_t handler) {
  return bsd_signal_hook(sig, handler);
}

MEMTAP_HOOK sighandler_t bsd_signal(int sig, sighandler_t handler) {
  return bsd_signal_hook(sig, handler);
}

MEMTAP_HOOK sighandler_t ssignal(int sig, sighandler_t handler) {
  return bsd_signal_hook(sig, handler);
}

MEMTAP_HOOK sighandler_t sysv_signal(int sig, sighandler_t handler) {
  return sysv_signal_hook(sig, handler);
}

MEMTAP_HOOK sighandler_t __sysv_signal(int sig, sighandler_t handler) {
  return sysv_signal_hook(sig, handler);
}

// X/Open: SIG_HOLD blocks the signal and leaves the disposition; anything else sets it with
// no flags and unblocks the signal. SIG_HOLD is the answer when it was blocked.
MEMTAP_HOOK sighandler_t sigset(int sig, sighandler_t disp) {
  if (!signal_taken(sig)) return real_function(g_real.sigset) ? g_real.sigset(sig, disp) : SIG_ERR;
  sigset_t set, old_mask;
  sigemptyset(&set);
  sigaddset(&set, sig);
  struct sigaction act {
  }, old{};
  if (disp == SIG_HOLD) {
    if (sigprocmask(SIG_BLOCK, &set, &old_mask) < 0) return SIG_ERR;
    if (sigismember(&old_mask, sig)) return SIG_HOLD;
    if (own_sigaction(sig, nullptr, &old) < 0) return SIG_ERR;
    return old.sa_handler;
  }
  act.sa_handler = disp;
  sigemptyset(&act.sa_mask);
  if (own_sigaction(sig, &act, &old) < 0) return SIG_ERR;
  if (sigprocmask(SIG_UNBLOCK, &set, &old_mask) < 0) return SIG_ERR;
  return sigismember(&old_mask, sig) ? SIG_HOLD : old.sa_handler;
}

MEMTAP_HOOK int sigignore(int sig) {
  if (!signal_taken(sig)) return real_function(g_real.sigignore) ? g_real.sigignore(sig) : -1;
  struct sigaction act {};
  act.sa_handler = SIG_IGN;
  sigemptyset(&act.sa_mask);
  return own_sigaction(sig, &act, nullptr);
}

MEMTAP_HOOK int siginterrupt(int sig, int interrupt) {
  if (!signal_taken(sig))
    return real_function(g_real.siginterrupt) ? g_real.siginterrupt(sig, interrupt) : -1;
  struct sigaction act {};
  if (own_sigaction(sig, nullptr, &act) < 0) return -1;
  if (interrupt) {
    g_interrupting.fetch_or(bit(sig), std::memory_order_relaxed);
    act.sa_flags &= ~SA_RESTART;
  } else {
    g_interrupting.fetch_and(~bit(sig), std::memory_order_relaxed);
    act.sa_flags |= SA_RESTART;
  }
  return own_sigaction(sig, &act, nullptr);
}
