// See live_support.h.
#include "monitor/live/live_support.h"

#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>

namespace memtap {

namespace {
// Written by the signal handler, read by the command loops: a signal handler can only
// reach a global.
volatile sig_atomic_t g_signal = 0;

void on_signal(int sig) {
  g_signal = sig;
}
}  // namespace

std::string default_db_path() {
  char name[64];
  time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(name, sizeof name, "memscope_dump_%Y%m%d%H%M%S.db", &tm);
  return std::string("./") + name;
}

std::string executable_dir() {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  exe[n] = 0;
  std::string dir(exe);
  return dir.substr(0, dir.rfind('/'));
}

std::string find_agent_library() {
  const std::string dir = executable_dir();
  if (dir.empty()) return "";
  for (const char* rel : {"/../lib/libmemtap_agent.so", "/../lib/memtap/libmemtap_agent.so"}) {
    std::string candidate = dir + rel;
    if (access(candidate.c_str(), R_OK) == 0) {
      char resolved[PATH_MAX];
      if (realpath(candidate.c_str(), resolved)) return resolved;
    }
  }
  return "";
}

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() {
  return g_signal != 0;
}
int last_signal() {
  return g_signal;
}

bool recording_options(bool compact, MemscopeWriterOptions* out, std::string* error) {
  out->compact = compact;
  const char* rows = getenv("MEMTAP_QUEUE_MEMORY_ROWS");
  if (rows == nullptr || *rows == '\0') return true;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = strtoull(rows, &end, 10);
  if (errno != 0 || *end != '\0' || !isdigit((unsigned char)rows[0])) {
    *error = std::string("MEMTAP_QUEUE_MEMORY_ROWS='") + rows + "': expected a number of rows";
    return false;
  }
  out->max_memory_rows = size_t(value);
  return true;
}

bool parse_max_processes(const std::string& value, size_t* out, std::string* error) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = strtoull(value.c_str(), &end, 10);
  // strtoull takes "-1" as 2^64 - 1: a digit must come first.
  if (value.empty() || !isdigit((unsigned char)value[0]) || *end != '\0' || errno != 0 || n == 0) {
    *error = "--max-processes: expected a number from 1, got '" + value + "'";
    return false;
  }
  *out = size_t(n);
  return true;
}

int progress_interval_ms() {
  const char* v = getenv("MEMTAP_PROGRESS_MS");
  return v != nullptr ? std::max(0, atoi(v)) : 0;
}

}  // namespace memtap
