// Two reports' devices side by side, for comparing two runs (`memtap diff`, `memtap check
// --baseline`): the same rank's (or the same started-nth process's) same device.
//
// Processes pair by rank when every process of both runs has one (a distributed job's
// ranks keep their meaning across runs, their pids do not); otherwise by the order they
// started in (Report::processes' order), since a rerun of the same script starts the same
// processes in the same order. Devices pair by their id within a paired process.
#pragma once

#include <string>
#include <vector>

#include "monitor/report/report.h"

namespace memtap {

struct DevicePair {
  const DeviceReport* base = nullptr;  // nullptr: the device is only in the new run
  const DeviceReport* now = nullptr;   // nullptr: the device is only in the base run
  // Which process and device, as a reader names it (the device as the report does,
  // units.h): "rank 1, device 0", or "process 2 (pid 4711 / pid 4802), host" where
  // processes pair by order.
  std::string label;
};

// Every device of either report once, paired where both have it, in the base's order and
// then the new run's own.
std::vector<DevicePair> line_up(const Report& base, const Report& now);

// Whether line_up pairs the two runs' processes by rank (every process of both has one),
// rather than by the order they started in.
bool pairs_by_rank(const Report& base, const Report& now);

}  // namespace memtap
