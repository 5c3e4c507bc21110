// What memtap run and memtap record print when a recording ends: where it went, what
// arrived and what was lost, then the same report `memtap report` gives for the file.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "monitor/engine/session.h"
#include "monitor/model/mem_event.h"
#include "monitor/model/process_info.h"

namespace memtap {

// "memtap: N processes, E events, D dropped, ...", what the monitor refused of its senders
// (live_input_text), and the processes that ended without their final flush.
void print_session_header(FILE* out, const std::vector<ProcessInfo>& processes,
                          const LiveInput& input);

// The session's counts as a recording keeps them.
LiveInput live_input(const InputCounts& counts);

// The processes as a report lists them (what memtap_session holds for them).
std::vector<RecordedProcess> recorded_processes(const std::vector<ProcessInfo>& processes);

}  // namespace memtap
