// Alternate signal stacks for the crash flush's handler (agent/crash_flush.cpp), so that a
// stack overflow, which leaves no stack to run a handler on, is flushed on every traced
// thread and not only the main one. sigaltstack is per thread: each thread gets its own,
// once, when the agent first sees it (its buffer's attach), and gives it back at its exit
// (the buffer key's destructor). Never on the agent's own threads (they record nothing, so
// they never attach), never in place of one the program set itself.
#pragma once

namespace memtap {

// From now on threads get an alternate stack; the calling thread gets one now (the main
// thread, at start-up: its first records came before this). Once, from
// crash_flush_install.
void alt_stacks_enable();

// The calling thread's alternate stack, if it has none yet and never had one from us.
// Called where a thread's buffer is attached, off the hot path: once per thread.
void alt_stack_for_this_thread();

// At the calling thread's exit: its stack from us taken down, unless the thread is running
// on it.
void alt_stack_release_at_thread_exit();

}  // namespace memtap
