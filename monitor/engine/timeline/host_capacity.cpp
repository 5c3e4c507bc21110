// See host_capacity.h.
#include "monitor/engine/timeline/host_capacity.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "monitor/model/mem_event.h"

namespace memtap::timeline {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
}

// The limit in the cgroup at `path` under `mount`, walking up to the mount's root: a
// container often sees its own cgroup as "/" while the limit sits on the path itself.
int64_t limit_under(const std::string& mount, std::string path, const char* file) {
  int64_t best = kUnknown;
  for (;;) {
    std::string text;
    if (read_file(mount + path + "/" + file, &text)) {
      int64_t limit = parse_memory_limit_bytes(text);
      if (limit != kUnknown) best = best == kUnknown ? limit : std::min(best, limit);
    }
    if (path.empty() || path == "/") break;
    size_t slash = path.find_last_of('/');
    path = slash == std::string::npos ? "" : path.substr(0, slash);
  }
  return best;
}

}  // namespace

int64_t parse_meminfo_total_bytes(std::string_view meminfo) {
  size_t at = meminfo.find("MemTotal:");
  if (at == std::string_view::npos) return kUnknown;
  std::string_view rest = meminfo.substr(at + 9);
  rest = rest.substr(0, rest.find('\n'));
  rest = trim(rest);
  int64_t kib = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
  if (ec != std::errc() || kib <= 0) return kUnknown;
  std::string_view unit = trim(std::string_view(end, size_t(rest.data() + rest.size() - end)));
  if (unit != "kB") return kUnknown;  // the only unit the kernel writes
  return kib * 1024;
}

int64_t parse_memory_limit_bytes(std::string_view text) {
  text = trim(text);
  int64_t bytes = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (ec != std::errc() || end != text.data() + text.size() || bytes <= 0) return kUnknown;
  return bytes;
}

CgroupPaths parse_proc_cgroup(std::string_view text) {
  CgroupPaths paths;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // hierarchy-id:controllers:path
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::string_view id = line.substr(0, c1), controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string_view path = trim(line.substr(c2 + 1));
    if (id == "0" && controllers.empty()) {
      paths.v2 = std::string(path);
      continue;
    }
    // v1 lists controllers comma-separated ("memory", or e.g. "cpu,cpuacct").
    std::string_view rest = controllers;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      if (rest.substr(0, comma) == "memory") paths.v1_memory = std::string(path);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return paths;
}

int64_t host_capacity_bytes(uint32_t pid) {
  int64_t capacity = kUnknown;
  std::string text;
  if (read_file("/proc/meminfo", &text)) capacity = parse_meminfo_total_bytes(text);

  std::string proc = pid == 0 ? "/proc/self/cgroup" : "/proc/" + std::to_string(pid) + "/cgroup";
  if (read_file(proc, &text)) {
    CgroupPaths paths = parse_proc_cgroup(text);
    int64_t limit = kUnknown;
    if (!paths.v2.empty()) {
      // Pure v2 mounts at /sys/fs/cgroup; the hybrid layout puts v2 at .../unified.
      limit = limit_under("/sys/fs/cgroup", paths.v2, "memory.max");
      if (limit == kUnknown) limit = limit_under("/sys/fs/cgroup/unified", paths.v2, "memory.max");
    }
    if (limit == kUnknown && !paths.v1_memory.empty())
      limit = limit_under("/sys/fs/cgroup/memory", paths.v1_memory, "memory.limit_in_bytes");
    if (limit != kUnknown) capacity = capacity == kUnknown ? limit : std::min(capacity, limit);
  }
  return capacity;
}

}  // namespace memtap::timeline
