// The sender's namespace's pthread_create and pthread_join (namespace_threads.cpp): its
// threads (the sender thread, ZeroMQ's I/O thread and reaper) run on stacks of their own, and
// are known by their thread ids while they run, so that they step back with the sender.
#pragma once

namespace memtap {

// Finds libc's pthread_create and pthread_join. Called before the namespace starts its first
// thread (memtap_sender_start), on the thread that starts it.
void resolve_thread_functions();

// Every thread of the namespace behind the program at `nice`: those running now (the caller
// last), and those started but not running yet, which step themselves back as they begin.
// Threads started after it begin there too.
void step_back_namespace_threads(int nice);

// Threads started from now on keep their creator's nice value: a sender starting again after
// a failed exec, whose Hello is not out yet.
void keep_creators_nice();

}  // namespace memtap
