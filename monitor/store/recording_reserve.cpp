// See recording_reserve.h.
#include "monitor/store/recording_reserve.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace memtap {
namespace {

// Process-wide, as the limit is: the user's soft limit and how much every reserve of the
// process holds below it together (two recordings at once lower it by both).
struct LimitState {
  std::mutex mutex;
  rlim_t user_soft = RLIM_INFINITY;  // meaningful while held != 0
  uint64_t held = 0;
};

LimitState& limit_state() {
  static LimitState state;
  return state;
}

// The user's soft limit while a reserve has lowered it, else RLIM_INFINITY: a copy for a
// forked child, which may not take LimitState's mutex (another thread may have held it at
// the fork). A global because the limit it restores is the process's.
std::atomic<rlim_t> g_lowered_from{RLIM_INFINITY};

}  // namespace

void RecordingReserve::create(const std::string& path, uint64_t bytes) {
  if (bytes == 0) return;
  hold_under_limit(bytes);
  path_ = path;
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  // posix_fallocate allocates the blocks (a sparse file would hold no room at all).
  if (fd_ < 0 || posix_fallocate(fd_, 0, off_t(bytes)) != 0) {
    if (fd_ >= 0) close(fd_);
    unlink(path.c_str());
    fd_ = -1;
    path_.clear();
    return;
  }
  file_bytes_ = bytes;
}

void RecordingReserve::release_half() {
  if (fd_ >= 0 && ftruncate(fd_, off_t(file_bytes_ / 2)) == 0) file_bytes_ /= 2;
  hold_under_limit(held_under_limit_ / 2);
}

void RecordingReserve::release() {
  if (fd_ >= 0) close(fd_);
  if (!path_.empty()) unlink(path_.c_str());
  fd_ = -1;
  path_.clear();
  file_bytes_ = 0;
  hold_under_limit(0);
}

void RecordingReserve::hold_under_limit(uint64_t bytes) {
  if (bytes == held_under_limit_) return;
  LimitState& s = limit_state();
  std::lock_guard lock(s.mutex);
  rlimit now{};
  if (getrlimit(RLIMIT_FSIZE, &now) != 0) return;
  if (s.held == 0) {
    if (now.rlim_cur == RLIM_INFINITY) return;  // no limit: no room to keep under it
    s.user_soft = now.rlim_cur;
  }
  const uint64_t total = s.held - held_under_limit_ + bytes;
  // Only under a limit with room to spare; giving room back is never refused.
  if (bytes > held_under_limit_ && uint64_t(s.user_soft) < 2 * total) return;
  const rlimit lowered{total == 0 ? s.user_soft : rlim_t(s.user_soft - total), now.rlim_max};
  if (setrlimit(RLIMIT_FSIZE, &lowered) != 0) return;
  s.held = total;
  held_under_limit_ = bytes;
  g_lowered_from.store(total == 0 ? RLIM_INFINITY : s.user_soft);
}

uint64_t user_file_size_limit() {
  LimitState& s = limit_state();
  std::lock_guard lock(s.mutex);
  if (s.held != 0) return s.user_soft;
  rlimit now{};
  if (getrlimit(RLIMIT_FSIZE, &now) != 0 || now.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return now.rlim_cur;
}

void restore_user_file_size_limit_in_child() {
  // System calls only: no lock, no allocation.
  const rlim_t soft = g_lowered_from.load();
  if (soft == RLIM_INFINITY) return;
  rlimit now{};
  if (getrlimit(RLIMIT_FSIZE, &now) != 0) return;
  now.rlim_cur = soft;
  setrlimit(RLIMIT_FSIZE, &now);
}

}  // namespace memtap
