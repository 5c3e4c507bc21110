// Pacing memtap's threads behind the program (see cpu_share.h).
#include "common/cpu_share.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/clock.h"

namespace memtap {

namespace {

// A small /proc file's text, NUL-terminated, into `text`; false when it cannot be read.
bool read_proc_text(const char* path, char* text, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, text, size - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  return true;
}

}  // namespace

// The runnable count of /proc/loadavg ("0.50 0.40 0.30 3/412 9876": 3), or -1.
int machine_runnable_threads() {
  char text[128];
  if (!read_proc_text("/proc/loadavg", text, sizeof text)) return -1;
  int running = 0, total = 0;
  double a = 0, b = 0, c = 0;
  if (sscanf(text, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) return -1;
  return running;
}

// /proc/thread-self/schedstat: "<ns on a CPU> <ns waiting for one> <timeslices>".
uint64_t thread_run_delay_ns() {
  char text[96];
  if (!read_proc_text("/proc/thread-self/schedstat", text, sizeof text)) return 0;
  uint64_t on_cpu = 0, waiting = 0;
  if (sscanf(text, "%" SCNu64 " %" SCNu64, &on_cpu, &waiting) != 2) return 0;
  return waiting;
}

namespace {

// The threads of /proc/<dir>/task in state R: memtap's (named `memtap-*` or `*ZMQbg/*`) and
// the others. False when the directory cannot be read.
bool runnable_tasks(const char* dir, int* others, int* memtaps) {
  *others = *memtaps = 0;
  DIR* tasks = opendir(dir);
  if (tasks == nullptr) return false;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    // Relative to the directory: a thread id may be as long as d_name allows.
    char path[sizeof entry->d_name + 8];
    snprintf(path, sizeof path, "%s/stat", entry->d_name);
    const int fd = openat(dirfd(tasks), path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the thread has just ended
    char text[512];
    const ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    // "tid (name) S ...": the name may hold spaces and parentheses, the last ')' ends it.
    const char* end = strrchr(text, ')');
    if (end == nullptr || end[1] != ' ' || end[2] != 'R') continue;
    const char* name = strchr(text, '(');
    const std::string_view comm = name != nullptr && name < end
                                      ? std::string_view(name + 1, size_t(end - name - 1))
                                      : std::string_view();
    if (comm.starts_with("memtap-") || comm.find("ZMQbg/") != std::string_view::npos) {
      ++*memtaps;
    } else {
      ++*others;
    }
  }
  closedir(tasks);
  return true;
}

}  // namespace

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  return std::max(1, CPU_COUNT(&set));
}

uint32_t min_share_permille() {
  const char* text = getenv("MEMTAP_CPU_SHARE");
  if (text == nullptr || *text == '\0') return CpuShare::kMinPermille;
  const double percent = atof(text);
  if (!(percent > 0)) return CpuShare::kMinPermille;
  return uint32_t(std::clamp(percent * 10.0, 1.0, 1000.0));
}

uint32_t share_for_backlog(uint32_t min_permille, double behind_s) {
  constexpr double kFullAtSeconds = 2.0;
  const uint32_t top = std::max(min_permille, CpuShare::kMaxPermille);
  if (!(behind_s > 0)) return min_permille;
  if (behind_s >= kFullAtSeconds) return top;
  return min_permille + uint32_t(double(top - min_permille) * behind_s / kFullAtSeconds);
}

uint32_t share_while_running(uint32_t min_permille, double behind_s, int program, int others,
                             int cpus) {
  if (program >= cpus) return share_for_backlog(min_permille, behind_s - kPatienceSeconds);
  if (others > 0 && program + others >= cpus) {
    return std::max(min_permille, CpuShare::kMaxPermille);
  }
  return share_for_backlog(min_permille, behind_s);
}

uint32_t view_share(uint32_t share, uint32_t min_permille, int program, int cpus) {
  return program >= cpus ? std::min(share, min_permille) : share;
}

void RecentRunnable::add(int program, int others) {
  program_[looks_ % kLooks] = program;
  others_[looks_ % kLooks] = others;
  ++looks_;
}

int RecentRunnable::look(int program, int memtap, int machine, int cpus) {
  add(program, machine < 0 ? 0 : std::max(0, machine - memtap - program));
  if (machine < 0) return -1;
  return spare_cores(cpus) == 0 ? 1 : 0;
}

int RecentRunnable::spare_cores(int cpus) const {
  return std::max(0, cpus - program() - others());
}

int RecentRunnable::program() const {
  return *std::max_element(program_.begin(), program_.end());
}

int RecentRunnable::others() const {
  return *std::min_element(others_.begin(), others_.end());
}

bool writer_leaves_the_cpu(bool live_behind, bool program_runs, int spare_cores) {
  return live_behind && program_runs && spare_cores < kLiveRecordingThreads;
}

bool others_fill_the_cores(int runnable, int mine, int cpus) {
  return runnable - std::max(mine, 1) >= cpus;
}

int my_runnable_threads() {
  int others = 0, memtaps = 0;
  return runnable_tasks("/proc/self/task", &others, &memtaps) ? others + memtaps : -1;
}

ProgramThreads program_runnable_threads(uint32_t pid) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%u/task", pid);
  ProgramThreads t;
  if (!runnable_tasks(dir, &t.program, &t.agent)) return {};
  return t;
}

bool cores_busy_without_me() {
  const int running = machine_runnable_threads();
  if (running < 0) return false;
  return others_fill_the_cores(running, my_runnable_threads(), usable_cpus());
}

int64_t CpuPacer::owed_wait_ns(uint64_t wall_ns, uint64_t cpu_ns, bool (*cores_busy)()) {
  // Accounting starts when the limit does: what the thread used before is not owed.
  const bool limited = share_->limited.load(std::memory_order_relaxed);
  const uint32_t permille = std::max<uint32_t>(1, permille_now());
  if (!limited || !was_limited_) {
    was_limited_ = limited;
    last_wall_ns_ = wall_ns;
    last_cpu_ns_ = cpu_ns;
    last_permille_ = permille;
    credit_ns_ = kBurstNs;
    return 0;
  }
  // The time since the last call earns at the share that held then: a share lowered now
  // applies from now on. Charged at the new one, a round the catch-up thread did at half a
  // core (150 ms of CPU in 600 ms) owed 4.6 s once a look saw the program's threads fill
  // the cores, and a PyTorch rank's sender fell 9 s behind.
  credit_ns_ +=
      int64_t(wall_ns - last_wall_ns_) * last_permille_ / 1000 - int64_t(cpu_ns - last_cpu_ns_);
  credit_ns_ = std::min(credit_ns_, kBurstNs);
  last_wall_ns_ = wall_ns;
  last_cpu_ns_ = cpu_ns;
  last_permille_ = permille;
  // Only a thread over its share looks at the machine: the check is a file read.
  if (credit_ns_ >= 0) return 0;
  if (!cores_busy()) {
    credit_ns_ = 0;  // a core is idle: take it, as a nice-19 thread would
    return 0;
  }
  // The credit regained while waiting pays what was overdrawn.
  return -credit_ns_ * 1000 / permille;
}

uint32_t CpuPacer::permille_now() const {
  const auto& rate = follows_ == Follows::kView ? share_->view_permille : share_->permille;
  return rate.load(std::memory_order_relaxed);
}

void CpuPacer::waited_on(uint64_t wall_ns, uint64_t cpu_ns) {
  was_limited_ = share_->limited.load(std::memory_order_relaxed);
  last_wall_ns_ = wall_ns;
  last_cpu_ns_ = cpu_ns;
  credit_ns_ = 0;  // as on an idle core: nothing owed, and no burst saved
}

bool (*CpuPacer::busy_probe() const)() {
  if (share_->cores_busy != nullptr) return share_->cores_busy;
  switch (share_->cores_full.load(std::memory_order_relaxed)) {
    case 0:
      return [] { return false; };
    case 1:
      return [] { return true; };
    default:
      return cores_busy_without_me;
  }
}

void CpuPacer::pace(const std::atomic<bool>* waited_on_flag) {
  if (share_ == nullptr) return;
  auto waited_on_now = [&] {
    if (waited_on_flag == nullptr || !waited_on_flag->load(std::memory_order_relaxed)) {
      return false;
    }
    waited_on(monotonic_ns(), thread_cpu_ns());
    return true;
  };
  if (waited_on_now()) return;
  int64_t wait = owed_wait_ns(monotonic_ns(), thread_cpu_ns(), busy_probe());
  // In steps, so that a lifted limit, a larger share or a thread waiting on this one is seen
  // soon; the cores are not asked again (sleeping threads leave them as they were).
  constexpr int64_t kMaxStepNs = 50'000'000;
  while (wait > 0) {
    if (waited_on_now()) return;
    const int64_t step = std::min(kMaxStepNs, wait);
    timespec ts{time_t(step / 1000000000), long(step % 1000000000)};
    nanosleep(&ts, nullptr);
    ++waits_;
    wait = owed_wait_ns(monotonic_ns(), thread_cpu_ns(), [] { return true; });
  }
}

}  // namespace memtap
