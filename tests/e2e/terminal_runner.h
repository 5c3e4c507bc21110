// A child process whose stderr is a terminal: a pseudo-terminal the test reads, for what
// memtap draws only for a person (common/terminal_progress.h).
#pragma once

#include <chrono>

#include "tests/e2e/process_runner.h"

namespace memtap::e2e {

// Runs `spec` with stdin and stderr on a pseudo-terminal (its controlling terminal, 200
// columns wide, in raw mode so that the bytes read are the bytes written) and stdout on a
// pipe; waits for it like run_process. `err` is what the terminal received. A start
// failure reads as exit_code -1 with the reason in err.
ProcessResult run_on_terminal(const ProcessSpec& spec,
                              std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace memtap::e2e
