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

}  // namespace memtap
