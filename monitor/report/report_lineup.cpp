#include "monitor/report/report_lineup.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "monitor/report/units.h"

namespace memtap {
namespace {

bool all_ranked(const Report& r) {
  return !r.processes.empty() && std::all_of(r.processes.begin(), r.processes.end(),
                                             [](const RecordedProcess& p) { return p.rank >= 0; });
}

// A process's place in its report: its rank, or its position among the processes.
std::map<uint32_t, int64_t> places(const Report& r, bool by_rank) {
  std::map<uint32_t, int64_t> out;
  for (size_t i = 0; i < r.processes.size(); ++i) {
    const RecordedProcess& p = r.processes[i];
    out.emplace(p.pid, by_rank ? p.rank : int64_t(i));
  }
  // A device of a pid the process list lacks comes after the known ones.
  int64_t next = by_rank ? 0 : int64_t(r.processes.size());
  if (by_rank) {
    for (const auto& [pid, place] : out) next = std::max(next, place + 1);
  }
  for (const DeviceReport& d : r.devices) {
    if (out.emplace(d.pid, next).second) ++next;
  }
  return out;
}

}  // namespace

bool pairs_by_rank(const Report& base, const Report& now) {
  return all_ranked(base) && all_ranked(now);
}

std::vector<DevicePair> line_up(const Report& base, const Report& now) {
  const bool by_rank = pairs_by_rank(base, now);
  const std::map<uint32_t, int64_t> base_places = places(base, by_rank);
  const std::map<uint32_t, int64_t> now_places = places(now, by_rank);
  std::map<std::pair<int64_t, int32_t>, const DeviceReport*> now_by_key;
  for (const DeviceReport& d : now.devices) {
    now_by_key.emplace(std::make_pair(now_places.at(d.pid), d.device), &d);
  }
  // The pid at a place in each run, for labels: a process may be there without the device.
  std::map<int64_t, uint32_t> base_pid_at, now_pid_at;
  for (const auto& [pid, place] : base_places) base_pid_at.emplace(place, pid);
  for (const auto& [pid, place] : now_places) now_pid_at.emplace(place, pid);
  auto label = [&](int64_t place, int32_t device) {
    std::optional<uint32_t> base_pid, now_pid;
    if (auto it = base_pid_at.find(place); it != base_pid_at.end()) base_pid = it->second;
    if (auto it = now_pid_at.find(place); it != now_pid_at.end()) now_pid = it->second;
    std::string who;
    if (by_rank) {
      who = "rank " + std::to_string(place);
    } else {
      who = "process " + std::to_string(place + 1) + " (";
      who += base_pid ? "pid " + std::to_string(*base_pid) : std::string("absent");
      who += " / ";
      who += now_pid ? "pid " + std::to_string(*now_pid) : std::string("absent");
      who += ")";
    }
    return who + ", " + device_text(device);
  };
  std::vector<DevicePair> out;
  std::map<std::pair<int64_t, int32_t>, bool> paired;
  for (const DeviceReport& d : base.devices) {
    const auto key = std::make_pair(base_places.at(d.pid), d.device);
    DevicePair pair;
    pair.base = &d;
    if (auto it = now_by_key.find(key); it != now_by_key.end() && !paired[key]) {
      pair.now = it->second;
      paired[key] = true;
    }
    pair.label = label(key.first, d.device);
    out.push_back(std::move(pair));
  }
  for (const DeviceReport& d : now.devices) {
    const auto key = std::make_pair(now_places.at(d.pid), d.device);
    if (paired[key]) continue;
    DevicePair pair;
    pair.now = &d;
    pair.label = label(key.first, d.device);
    out.push_back(std::move(pair));
  }
  return out;
}

}  // namespace memtap
