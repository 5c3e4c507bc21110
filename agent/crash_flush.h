// The final flush on a fatal signal (a crash, SIGTERM, SIGINT): the events of a program's
// last milliseconds reach the recording before it dies, and it dies exactly as it would
// without memtap.
#pragma once

#include <cstdint>

#include "agent/sender/sender_api.h"

namespace memtap {

// Shared with the sender (MemtapSenderConfig::crash_flush).
extern CrashFlushWords g_crash_flush;

// Installs the handler for the signals it takes (agent_init, once a sender runs), which
// then stands in for the program's dispositions (signal_dispositions.h). `deadline_ms`: the
// most a fatal signal waits for the flush (MEMTAP_CRASH_FLUSH_MS); 0 installs nothing.
void crash_flush_install(uint32_t deadline_ms);

// The sender thread's id, so that a signal on it is handed on at once (it cannot wait for
// its own flush). Set on that thread.
void crash_flush_set_sender_thread(uint32_t tid);

// In a fork() child, before its own sender starts: the parent's words are not its own.
void crash_flush_after_fork_child();

// The final flush is exit's (agent_stop) or a fatal signal's, whichever claims
// g_agent.stopped first; the one that comes second waits for it (up to the deadline above)
// before the process ends, rather than cut it short: a pool's SIGTERM to a worker in the
// middle of _exit's flush killed it there, its last events and Bye lost, and an _exit on one
// thread while another thread's signal flushed ended the process under that flush.
// exit's flush calls these around itself, on the exiting thread. `limit_ms`: the most that
// flush may take by its own limit (exit's: MEMTAP_FLUSH_TIMEOUT_MS; a signal's: 0, its
// deadline above): one that comes second waits that long, plus its own deadline. A SIGTERM
// during an exit flush that had more to send than the signal's deadline let through (a busy
// machine) ended the process inside it, its Bye lost: the process was ending anyway, and
// without the signal would have waited as long.
void final_flush_begin(uint32_t limit_ms);
void final_flush_end();
// For the one that came second; returns at once on the thread that flushes.
void wait_for_final_flush();

// Around the flush before an exec (agent_before_exec), which a fatal signal taken on
// another thread meanwhile waits for as for exit's, up to its limit (`limit_ms`) plus the
// signal's deadline.
void exec_flush_begin(uint32_t limit_ms);
void exec_flush_end();

// Before an exec (agent_before_exec), on the exec-ing thread. A fatal signal taken on
// another thread waits in its handler for the flush, then ends the process by that signal:
// an exec meanwhile would end that thread, and the signal with it, and the program would
// run on as the new image (without memtap, the signal ends it). So while one is under way
// the exec waits for the process to end: at most the deadline for the flush, then the
// deadline again. `exec_flushed`: this thread has just done the exec flush, which is the
// flush the handler waits for (it sent everything, and a Bye if the request came in time):
// the handler is told it is done. Returns at once when no fatal signal is under way.
void wait_for_a_fatal_signal_before_exec(bool exec_flushed);

}  // namespace memtap
