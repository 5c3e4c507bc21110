// The sender's namespace's pthread_create and pthread_join (namespace_threads.cpp): its
// threads (the sender thread, its catch-up thread, ZeroMQ's I/O thread and reaper) run on
// stacks of their own.
#pragma once

namespace memtap {

// Finds libc's pthread_create and pthread_join. Called before the namespace starts its first
// thread (memtap_sender_start), on the thread that starts it.
void resolve_thread_functions();

}  // namespace memtap
