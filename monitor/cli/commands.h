// The `memtap` subcommands. Each takes the arguments after its name and returns the
// process exit code.
#pragma once

#include <string>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/store/memscope_writer.h"
#include "monitor/store/reader/recording_reader.h"

namespace memtap {

int run_command(const std::vector<std::string>& args);
int record_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);
int replay_command(const std::vector<std::string>& args);
int export_command(const std::vector<std::string>& args);

// Shared by report and replay (report_command.cpp).
// Events per Analyzer::add: large enough that its two analyses run side by side, small
// enough that a streamed file stays within a few tens of MB.
constexpr size_t kReportBatchEvents = 262144;
// The options report and replay share.
struct ReportOptions {
  bool json = false;        // --json
  bool low_memory = false;  // --low-memory (recording_feed.h)
  AnalyzerOptions analysis;
};
// One of --json, --low-memory, --top, --lazy-used-ms, --delayed-free-ms, --long-idle-ms,
// --capacity-mb at args[*i] (with its value, advancing *i); false with *error otherwise.
bool parse_report_option(const std::vector<std::string>& args, size_t* i, ReportOptions* options,
                         std::string* error);
// The analyzer's report of a file, labelled with where it came from, on stdout as text or
// JSON.
void print_recording_report(const Analyzer& analyzer, const Recording& rec, const std::string& path,
                            bool json);

// Shared helpers for the commands (cli_util.cpp).
// "./memscope_dump_<YYYYmmddHHMMSS>.db": the name MindStudio Insight's importer matches.
std::string default_db_path();
// The agent next to this executable: <bin>/../lib/libmemtap_agent.so, or
// <bin>/../lib/memtap/libmemtap_agent.so in an installed tree. "" if neither exists.
std::string find_agent_library();
// The training process comes first: once `memtap run` has started the program, the
// monitor's threads run at nice MEMTAP_MONITOR_NICE (default 19, kBehindTheProgramNice; 0 keeps
// them as they are), so on a machine with few cores the program gets the CPU and the monitor the
// rest (the agent's bounded buffers absorb the difference; the monitor catches up when the program
// idles or ends). The thread that forks the program steps back only after the fork
// (calling_thread_too), since a child inherits its nice value and may not lower it again.
// Returns the number of threads changed.
int yield_cpu_to_the_program(bool calling_thread_too);
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
