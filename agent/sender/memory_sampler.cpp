// See memory_sampler.h.
#include "agent/sender/memory_sampler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "agent/sender/fd_floor.h"

namespace memtap {

MemorySampler::MemorySampler(uint32_t interval_ms)
    : interval_ns_(uint64_t(interval_ms) * 1000000), page_bytes_(uint64_t(sysconf(_SC_PAGESIZE))) {
  // Kept open: a sample is then an fstat and a pread, not an open/read/close, whose moment
  // at the lowest free number a program's dup2 onto that number could take.
  if (interval_ms != 0) open_statm();
}

MemorySampler::~MemorySampler() {
  if (statm_is_ours()) close(statm_fd_);
}

void MemorySampler::open_statm() {
  statm_fd_ = moved_above_program_fds(open("/proc/self/statm", O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (statm_fd_ >= 0 && fstat(statm_fd_, &st) == 0) {
    statm_dev_ = uint64_t(st.st_dev);
    statm_ino_ = uint64_t(st.st_ino);
  }
}

bool MemorySampler::statm_is_ours() {
  struct stat st;
  return statm_fd_ >= 0 && fstat(statm_fd_, &st) == 0 && uint64_t(st.st_dev) == statm_dev_ &&
         uint64_t(st.st_ino) == statm_ino_;
}

bool MemorySampler::sample_if_due(uint64_t now_ns, bool force, uint32_t pid, DrainResult* out) {
  if (interval_ns_ == 0 || (!force && now_ns < next_ns_)) return false;
  next_ns_ = now_ns + interval_ns_;
  // The number is the program's now: left to it, never closed here.
  if (!statm_is_ours()) open_statm();
  if (statm_fd_ < 0) return false;
  char buf[128];
  ssize_t n = pread(statm_fd_, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = 0;
  // "size resident shared text lib data dt", in pages.
  unsigned long long size_pages = 0, resident_pages = 0;
  if (sscanf(buf, "%llu %llu", &size_pages, &resident_pages) != 2) return false;
  EventRecord r{};
  r.ts_ns = now_ns;
  r.size_bytes = resident_pages * page_bytes_;
  r.kind = uint16_t(EventKind::kRssSample);
  out->threads.push_back({pid, out->records.size(), 1});
  out->records.push_back(r);
  return true;
}

uint64_t MemorySampler::memory_total_bytes() {
  // cgroup v2: /proc/self/cgroup has "0::<path>"; its memory.max is a number or "max".
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::ifstream max("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    std::string value;
    if (max >> value && value != "max") {
      uint64_t limit = strtoull(value.c_str(), nullptr, 10);
      if (limit != 0) return limit;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  while (std::getline(meminfo, line)) {
    unsigned long long kib = 0;
    if (sscanf(line.c_str(), "MemTotal: %llu kB", &kib) == 1) return kib * 1024;
  }
  return 0;
}

}  // namespace memtap
