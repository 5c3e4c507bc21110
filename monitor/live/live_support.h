// What `memtap run`, `memtap record` and the window's live modes share around a live
// recording: where files and the agent are, the stop signals, the options read from the
// environment.
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
// How `memtap run` and `memtap record` write the recording: `compact` (--compact), and
// MEMTAP_QUEUE_MEMORY_ROWS, the rows queued in memory before the queue goes to disk while
// SQLite is behind (MemscopeWriterOptions::max_memory_rows; 0: memory only). A value
// that is not a number is an error naming it.
bool recording_options(bool compact, MemscopeWriterOptions* out, std::string* error);
// --max-processes N of every command that listens (record, run, monitor --listen): how many
// processes may be recorded at once (SessionLimits::max_processes, 4096 by default). False
// with *error ("--max-processes: expected a number from 1, got 'x'") for anything else.
bool parse_max_processes(const std::string& value, size_t* out, std::string* error);
// MEMTAP_PROGRESS_MS: how often `memtap run` and `memtap record` print a progress line
// (LiveRecording::progress_line) to stderr while recording, and while catching up after;
// 0 (the default, or not a number): never.
int progress_interval_ms();
// Blocks SIGINT/SIGTERM's default action; interrupted() tells whether one arrived.
void install_stop_signals();
bool interrupted();
int last_signal();

}  // namespace memtap
