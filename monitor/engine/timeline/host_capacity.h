// How much memory a process on this host may use: the machine's MemTotal, lowered by the
// memory limit of the process's cgroup (v2 memory.max; v1 memory.limit_in_bytes on hosts
// still on the hybrid layout). The capacity for the host's time to OOM.
//
// The timeline never calls this itself: the caller reads it once and hands it over
// (Timeline::set_capacity), so that tests and replays of another machine's recording
// are not at the mercy of the machine they run on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memtap::timeline {

// MemTotal from /proc/meminfo text, in bytes; kUnknown (-1) if absent.
int64_t parse_meminfo_total_bytes(std::string_view meminfo);

// A cgroup limit file's content ("max\n", "8589934592\n"); kUnknown for "max" or garbage.
int64_t parse_memory_limit_bytes(std::string_view text);

// The process's cgroup paths from /proc/<pid>/cgroup text: the v2 path ("0::/a/b") and the
// v1 memory controller's path ("4:memory:/a/b"); empty when not listed.
struct CgroupPaths {
  std::string v2;
  std::string v1_memory;
};
CgroupPaths parse_proc_cgroup(std::string_view text);

// min(MemTotal, the cgroup limit of `pid` (0: this process)), or kUnknown if neither can
// be read.
int64_t host_capacity_bytes(uint32_t pid = 0);

}  // namespace memtap::timeline
