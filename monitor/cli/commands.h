// The `memtap` subcommands. Each takes the arguments after its name and returns the
// process exit code.
#pragma once

#include <string>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/live/live_support.h"
#include "monitor/report/report.h"
#include "monitor/store/memscope_writer.h"
#include "monitor/store/reader/recording_reader.h"

namespace CLI {
class App;
}  // namespace CLI

namespace memtap {

int run_command(const std::vector<std::string>& args);
int record_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);
int replay_command(const std::vector<std::string>& args);
int export_command(const std::vector<std::string>& args);
int keygen_command(const std::vector<std::string>& args);
int recover_command(const std::vector<std::string>& args);
int import_command(const std::vector<std::string>& args);
int diff_command(const std::vector<std::string>& args);
int check_command(const std::vector<std::string>& args);

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
// Adds the options report and replay share to `app`, filling *options: --json, --low-memory,
// --top N (unless `with_top` is false: diff shows entries its own way), --lazy-used-ms,
// --delayed-free-ms, --long-idle-ms, --capacity-mb.
void add_report_options(CLI::App* app, ReportOptions* options, bool with_top = true);
// The analyzer's report of a file, labelled with where it came from, on stdout as text or
// JSON.
void print_recording_report(const Analyzer& analyzer, const Recording& rec, const std::string& path,
                            bool json);
// The report of the file at `path` (any format report reads), as `memtap report` prints it:
// for diff and check. False with *error (one line naming the file) when it cannot be read.
// How a file too large to hold is read is said on stderr, after `command` ("memtap diff").
bool analyse_recording(const std::string& path, const ReportOptions& options, const char* command,
                       Report* out, std::string* error);

}  // namespace memtap
