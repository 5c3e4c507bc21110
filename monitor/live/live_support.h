// What `memtap run`, `memtap record` and the window's live modes share around a live
// recording: where files and the agent are, the stop signals, the options read from the
// environment, and stepping the monitor's threads back for the program.
#pragma once

#include <string>

#include "monitor/store/memscope_writer.h"

namespace memtap {

// "./memscope_dump_<YYYYmmddHHMMSS>.db": the name MindStudio Insight's importer matches.
std::string default_db_path();
// The agent next to this executable: <bin>/../lib/libmemtap_agent.so, or
// <bin>/../lib/memtap/libmemtap_agent.so in an installed tree. "" if neither exists.
std::string find_agent_library();
// The directory of this executable ("" if /proc/self/exe cannot be read): memtap finds
// memtap-gui there, and the agent below it.
std::string executable_dir();
// The training process comes first: once `memtap run` has started the program, the
// monitor's threads run at nice MEMTAP_MONITOR_NICE (default 19, kBehindTheProgramNice; 0 keeps
// them as they are), so on a machine with few cores the program gets the CPU and the monitor the
// rest (the agent's bounded buffers absorb the difference; the monitor catches up when the program
// idles or ends). The thread that forks the program steps back only after the fork
// (calling_thread_too), since a child inherits its nice value and may not lower it again.
// `spare_tid`, when not 0, is a thread left as it is: the window's, which the user is
// looking at and which does little work of its own. Returns the number of threads changed.
int yield_cpu_to_the_program(bool calling_thread_too, int spare_tid = 0);
// How `memtap run` and `memtap record` write the recording: `compact` (--compact), and
// MEMTAP_QUEUE_MEMORY_ROWS, the rows queued in memory before the queue goes to disk while
// SQLite is behind (MemscopeWriterOptions::max_memory_rows; 0: memory only). A value
// that is not a number is an error naming it.
bool recording_options(bool compact, MemscopeWriterOptions* out, std::string* error);
// MEMTAP_PROGRESS_MS: how often `memtap run` and `memtap record` print a progress line
// (LiveRecording::progress_line) to stderr while recording, and while catching up after;
// 0 (the default, or not a number): never.
int progress_interval_ms();
// Blocks SIGINT/SIGTERM's default action; interrupted() tells whether one arrived.
void install_stop_signals();
bool interrupted();
int last_signal();

}  // namespace memtap
