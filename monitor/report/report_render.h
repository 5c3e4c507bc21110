// Rendering a Report: readable text for the terminal, JSON for scripts and CI. Both say
// what the recording could not tell (no step markers, no access events, no capacity)
// rather than print zeros as findings.
#pragma once

#include <cstdio>
#include <string>

#include "monitor/report/report.h"

namespace memtap {

void report_text(const Report& report, FILE* out);

// Where a recording stopped, for people: "after 7699 events, 3.4 s into the session (at
// 14:02:31)" (the clock time local).
std::string recording_stop_position(const RecordingStop& stop);
std::string report_json(const Report& report);

// What a live monitor refused, in words, one line per kind of loss ("57 messages rejected:
// 3 malformed, ..."; "1016 hellos dropped: ..."), each starting with `prefix`. Nothing when
// nothing was refused.
void live_input_text(const LiveInput& input, const char* prefix, FILE* out);

// A process the live monitor stopped waiting for (ProcessInfo::stalls), in words: "stalled
// once: the recording went on without it, and what it sent later came late". "" for 0.
std::string stalled_text(uint64_t stalls);

}  // namespace memtap
