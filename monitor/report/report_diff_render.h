// Rendering a ReportDiff: text for the terminal (the headline first, then each device's
// changes, largest first, unchanged entries left out), JSON for scripts (every entry of the
// diff, unchanged ones included; the same values and the same words as the text).
#pragma once

#include <cstdio>
#include <string>

#include "monitor/report/report_diff.h"

namespace memtap {

void diff_text(const ReportDiff& diff, FILE* out);
std::string diff_json(const ReportDiff& diff);

// A headline in one line: "peak +1.2 GiB (+35%) on rank 0, device 0: owner X +1.1 GiB (+40%),
// name aten::mm +0.9 GiB (new)".
std::string finding_text(const Finding& finding);

}  // namespace memtap
