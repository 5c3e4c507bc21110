// The program's own dispositions of the signals the agent's handler stands in for.
//
// For such a "taken" signal the kernel holds the agent's handler (agent/crash_flush.cpp), or
// SIG_IGN when the program ignores it, and this table holds what the program asked for: its
// handler, SIG_DFL or SIG_IGN, with the mask and flags the kernel would have stored. The
// hooks (agent/hooks/signal_hooks.cpp) answer and change it instead of the kernel's; the
// agent's handler reads it to decide what the kernel would have done.
#pragma once

#include <signal.h>

#include <cstdint>

namespace memtap {

using AgentSignalHandler = void (*)(int, siginfo_t*, void*);

// A disposition as the kernel holds one.
struct Disposition {
  void* handler;  // SIG_DFL, SIG_IGN or the program's function (sa_handler or sa_sigaction)
  uint64_t mask;  // the kernel's signal set: bit n - 1 for signal n
  int flags;      // SA_*, with what libc adds (SA_RESTORER)
  void (*restorer)(void);
};

inline bool is_function(const void* handler) {
  return handler != reinterpret_cast<void*>(SIG_DFL) && handler != reinterpret_cast<void*>(SIG_IGN);
}

// Takes `sig` over: the disposition it has becomes the program's own, and `handler` goes
// in the kernel unless that disposition is SIG_IGN. At start-up (agent_init).
void take_signal(int sig, AgentSignalHandler handler);

// Whether the hooks stand in for `sig` in this process: taken, and in the process that took
// it or a fork() child with a sender of its own; not in a vfork() child, which shares our
// memory but not our dispositions, so its changes go to the kernel.
bool signal_taken(int sig);

// sigaction() as the program sees it, for a taken signal: answers and sets its own
// disposition, and keeps the kernel's in step (the agent's handler with the program's mask
// and flags, or SIG_IGN). libc's sigaction semantics and return value.
int own_sigaction(int sig, const struct sigaction* act, struct sigaction* oact);

// The program's own disposition (for the agent's handler). Async-signal-safe, lock-free
// for readers.
Disposition own_disposition(int sig);

// SA_RESETHAND, at delivery: the program's own handler becomes SIG_DFL, as the kernel
// would reset it, if it still is `handler`.
void reset_own_disposition(int sig, void* handler);

// libc's sigaction, past our hook: what the agent itself uses.
int real_sigaction(int sig, const struct sigaction* act, struct sigaction* oact);

}  // namespace memtap
