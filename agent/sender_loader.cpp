// See sender_loader.h.
#include "agent/sender_loader.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace memtap {

memtap_sender_stop_fn load_and_start_sender(const MemtapSenderConfig& config, char* error,
                                            size_t error_len) {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&load_and_start_sender), &info) || !info.dli_fname) {
    snprintf(error, error_len, "cannot find the agent's own path");
    return nullptr;
  }
  char path[4096];
  const char* slash = strrchr(info.dli_fname, '/');
  int dir_len = slash ? int(slash - info.dli_fname) : 1;
  const char* dir = slash ? info.dli_fname : ".";
  if (size_t(snprintf(path, sizeof path, "%.*s/libmemtap_sender.so", dir_len, dir)) >=
      sizeof path) {
    snprintf(error, error_len, "agent path too long");
    return nullptr;
  }
  void* handle = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    snprintf(error, error_len, "cannot load %s: %s", path, why ? why : "unknown error");
    return nullptr;
  }
  auto start = reinterpret_cast<memtap_sender_start_fn>(dlsym(handle, "memtap_sender_start"));
  auto stop = reinterpret_cast<memtap_sender_stop_fn>(dlsym(handle, "memtap_sender_stop"));
  if (!start || !stop) {
    snprintf(error, error_len, "%s lacks memtap_sender_start/stop", path);
    return nullptr;
  }
  if (start(&config, error, error_len) != 0) return nullptr;
  return stop;
}

}  // namespace memtap
