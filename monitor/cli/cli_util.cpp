// Helpers shared by the memtap subcommands; see commands.h.
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <ctime>

#include "monitor/cli/commands.h"

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

std::string find_agent_library() {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  exe[n] = 0;
  std::string dir(exe);
  dir = dir.substr(0, dir.rfind('/'));
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

}  // namespace memtap
