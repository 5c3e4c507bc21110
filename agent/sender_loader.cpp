// See sender_loader.h.
#include "agent/sender_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace memtap {

namespace {

// The sender's absolute path, found once at start-up. A fork() child loads it again later,
// possibly after the program changed directory, while the agent's own path (from
// LD_PRELOAD) may be relative. A global because the fork hook has no other way to reach it.
char g_sender_path[4096];

bool find_sender_path(char* error, size_t error_len) {
  if (g_sender_path[0]) return true;
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&load_and_start_sender), &info) || !info.dli_fname) {
    snprintf(error, error_len, "cannot find the agent's own path");
    return false;
  }
  const char* slash = strrchr(info.dli_fname, '/');
  int dir_len = slash ? int(slash - info.dli_fname) : 0;
  char cwd[2048] = "";
  if (info.dli_fname[0] != '/' && !getcwd(cwd, sizeof cwd)) cwd[0] = 0;
  int n = snprintf(g_sender_path, sizeof g_sender_path, "%s%s%.*s%slibmemtap_sender.so", cwd,
                   cwd[0] ? "/" : "", dir_len, info.dli_fname, dir_len ? "/" : "");
  if (n < 0 || size_t(n) >= sizeof g_sender_path) {
    g_sender_path[0] = 0;
    snprintf(error, error_len, "agent path too long");
    return false;
  }
  return true;
}

}  // namespace

memtap_sender_stop_fn load_and_start_sender(const MemtapSenderConfig& config,
                                            memtap_sender_exec_fn* exec, char* error,
                                            size_t error_len) {
  *exec = nullptr;
  if (!find_sender_path(error, error_len)) return nullptr;
  const char* path = g_sender_path;
  void* handle = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    snprintf(error, error_len, "cannot load %s: %s", path, why ? why : "unknown error");
    return nullptr;
  }
  auto start = reinterpret_cast<memtap_sender_start_fn>(dlsym(handle, "memtap_sender_start"));
  auto stop = reinterpret_cast<memtap_sender_stop_fn>(dlsym(handle, "memtap_sender_stop"));
  auto exec_fn = reinterpret_cast<memtap_sender_exec_fn>(dlsym(handle, "memtap_sender_exec"));
  if (!start || !stop || !exec_fn) {
    snprintf(error, error_len, "%s lacks memtap_sender_start/stop/exec", path);
    return nullptr;
  }
  if (start(&config, error, error_len) != 0) return nullptr;
  *exec = exec_fn;
  return stop;
}

}  // namespace memtap
