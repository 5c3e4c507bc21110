// `memtap run`'s command line, declared once: memtap reads it for `memtap run`, and
// memtap-gui reads it again for the window's live run (`memtap run --gui` execs
// `memtap-gui --run ARGS`), so both take the same options, checked and explained alike.
#pragma once

#include <string>

#include "monitor/live/program_run.h"

namespace CLI {
class App;
}  // namespace CLI

namespace memtap {

// Names `app` `memtap run`, gives it run's synopsis and declares the options that go before
// the program into *o (the program and its arguments are parse_command_line's `rest`).
void declare_run_command(CLI::App* app, RunOptions* o);

// After parsing, what makes the run impossible, in one line ("" when nothing): no program;
// --max-processes with --connect (it limits a monitor here); with `gui` (--gui), --connect
// (the window records here). memtap asks it for `memtap run`, memtap-gui again for its run.
std::string run_options_problem(const CLI::App& app, const RunOptions& o, bool gui);

}  // namespace memtap
