// Holding a thread's asynchronous signals while the agent starts a sender (AsyncSignalsHeld)
// or flushes at exit (hold_async_signals).
#pragma once

#include <pthread.h>
#include <signal.h>

namespace memtap {

// Blocks the calling thread's asynchronous signals; returns the mask it had. Faults stay
// deliverable (blocked, the kernel kills at once), and so does SIGABRT (abort() unblocks it
// anyway).
inline sigset_t hold_async_signals() {
  sigset_t asynchronous, before;
  sigfillset(&asynchronous);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT}) {
    sigdelset(&asynchronous, sig);
  }
  pthread_sigmask(SIG_BLOCK, &asynchronous, &before);
  return before;
}

// hold_async_signals for its lifetime, then the mask it found again; nested holds restore in
// turn. Around a sender's start (at start-up, and in a fork() child from before the fork,
// whose mask the child inherits): a signal taken meanwhile found no sender to flush and the
// process ended missing from the recording (a pool terminating a worker it has just forked;
// a SIGTERM sent the moment fork returns reaches the child as it first runs), and a
// program's handler run meanwhile would run inside dlmopen, under the loader's lock.
class AsyncSignalsHeld {
 public:
  AsyncSignalsHeld() : before_(hold_async_signals()) {}
  ~AsyncSignalsHeld() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  AsyncSignalsHeld(const AsyncSignalsHeld&) = delete;
  AsyncSignalsHeld& operator=(const AsyncSignalsHeld&) = delete;

 private:
  sigset_t before_;
};

}  // namespace memtap
