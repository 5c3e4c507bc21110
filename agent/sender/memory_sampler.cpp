// See memory_sampler.h.
#include "agent/sender/memory_sampler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "agent/sender/fd_floor.h"

namespace memtap {

MemorySampler::MemorySampler(uint32_t interval_ms)
    : interval_ns_(uint64_t(interval_ms) * 1000000),
      page_bytes_(uint64_t(sysconf(_SC_PAGESIZE))),
      on_time_(interval_ms != 0),
      in_round_(interval_ms != 0) {}

// Kept open: a sample is then an fstat and a pread, not an open/read/close, whose moment
// at the lowest free number a program's dup2 onto that number could take.
MemorySampler::Statm::Statm(bool open_now) {
  if (open_now) open_file();
}

MemorySampler::Statm::~Statm() {
  if (is_ours()) close(fd_);
}

void MemorySampler::Statm::open_file() {
  fd_ = moved_above_program_fds(open("/proc/self/statm", O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (fd_ >= 0 && fstat(fd_, &st) == 0) {
    dev_ = uint64_t(st.st_dev);
    ino_ = uint64_t(st.st_ino);
  }
}

bool MemorySampler::Statm::is_ours() {
  struct stat st;
  return fd_ >= 0 && fstat(fd_, &st) == 0 && uint64_t(st.st_dev) == dev_ &&
         uint64_t(st.st_ino) == ino_;
}

bool MemorySampler::Statm::read_resident(uint64_t page_bytes, uint64_t* bytes) {
  // The number is the program's now: left to it, never closed here.
  if (!is_ours()) open_file();
  if (fd_ < 0) return false;
  char buf[128];
  ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = 0;
  // "size resident shared text lib data dt", in pages.
  unsigned long long size_pages = 0, resident_pages = 0;
  if (sscanf(buf, "%llu %llu", &size_pages, &resident_pages) != 2) return false;
  *bytes = resident_pages * page_bytes;
  return true;
}

uint64_t MemorySampler::sample_when_due(uint64_t now_ns, By by) {
  if (interval_ns_ == 0) return UINT64_MAX;
  const uint64_t due_ns = next_ns_.load(std::memory_order_relaxed);
  if (now_ns < due_ns) return due_ns - now_ns;
  std::unique_lock<std::mutex> lock(reading_, std::try_to_lock);
  if (!lock.owns_lock()) return interval_ns_ / 2;  // the other one is reading it now
  uint64_t next = next_ns_.load(std::memory_order_relaxed);
  if (now_ns < next) return next - now_ns;  // the other one just did
  // On the interval's grid, not `interval` after this reading: a thread woken late would
  // otherwise drift, and one woken early (a futex wait cut short) read twice.
  next = next == 0 || now_ns - next >= interval_ns_ ? now_ns + interval_ns_ : next + interval_ns_;
  next_ns_.store(next, std::memory_order_relaxed);
  last_by_catch_up_.store(by == By::kCatchUp, std::memory_order_relaxed);
  const uint64_t written = written_.load(std::memory_order_relaxed);
  const uint64_t used = written - read_.load(std::memory_order_acquire);
  // Past half full keep every second reading, past three quarters every fourth, ...
  unsigned level = 0;
  while (level < 63 && used >= kKept - (kKept >> (level + 1))) ++level;
  const uint64_t due = due_count_++;
  if (used >= kKept || (due & ((uint64_t{1} << level) - 1)) != 0) return next - now_ns;
  uint64_t bytes = 0;
  if (on_time_.read_resident(page_bytes_, &bytes)) {
    kept_[written % kKept] = {now_ns, bytes};
    written_.store(written + 1, std::memory_order_release);
  }
  return next - now_ns;
}

int64_t MemorySampler::since_due_ns(uint64_t now_ns) const {
  if (interval_ns_ == 0) return INT64_MIN;
  return int64_t(now_ns) - int64_t(next_ns_.load(std::memory_order_relaxed));
}

size_t MemorySampler::take(uint64_t now_ns, bool read_now, uint64_t not_before_ns, uint32_t pid,
                           DrainResult* out) {
  if (interval_ns_ == 0) return 0;
  const size_t first = out->records.size();
  auto append = [&](uint64_t ts_ns, uint64_t bytes) {
    EventRecord r{};
    r.ts_ns = std::max(ts_ns, not_before_ns);
    r.size_bytes = bytes;
    r.kind = uint16_t(EventKind::kRssSample);
    out->records.push_back(r);
  };
  const uint64_t from = read_.load(std::memory_order_relaxed);
  const uint64_t to = written_.load(std::memory_order_acquire);
  for (uint64_t i = from; i < to; ++i)
    append(kept_[i % kKept].ts_ns, kept_[i % kKept].resident_bytes);
  read_.store(to, std::memory_order_release);
  uint64_t bytes = 0;
  if (read_now && in_round_.read_resident(page_bytes_, &bytes)) append(now_ns, bytes);
  const size_t n = out->records.size() - first;
  if (n != 0) out->threads.push_back({pid, first, n});
  return n;
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
