// What memtap run and memtap record print when a recording ends: where it went, what
// arrived and what was lost, then the same report `memtap report` gives for the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "monitor/engine/session.h"
#include "monitor/model/mem_event.h"
#include "monitor/model/process_info.h"

namespace memtap {

// "memtap: N processes, E events, D dropped, ...", what the monitor refused of its senders
// (live_input_text), and the processes that ended without their final flush. E is
// `events`, the rows the report below counts: the agents also send owner changes, which
// label the rows rather than being rows, and "10,938 events" above a report of 9,538 read
// as a loss.
void print_session_header(FILE* out, const std::vector<ProcessInfo>& processes,
                          const LiveInput& input, uint64_t events);

// The session's counts as a recording keeps them.
LiveInput live_input(const InputCounts& counts);

// The processes as a report lists them (what memtap_session holds for them).
std::vector<RecordedProcess> recorded_processes(const std::vector<ProcessInfo>& processes);

}  // namespace memtap
