// The per-user directory for IPC sockets, computed without allocating (the agent needs it
// before the application's heap may be touched): $XDG_RUNTIME_DIR/memtap when that is a
// directory of ours, else /tmp/memtap-<uid>. The monitor creates it with mode 0700.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace memtap {

inline bool user_socket_dir_path(char* out, size_t len) {
  const char* runtime = getenv("XDG_RUNTIME_DIR");
  struct stat st;
  if (runtime && *runtime && stat(runtime, &st) == 0 && S_ISDIR(st.st_mode) &&
      st.st_uid == getuid()) {
    return size_t(snprintf(out, len, "%s/memtap", runtime)) < len;
  }
  return size_t(snprintf(out, len, "/tmp/memtap-%u", unsigned(getuid()))) < len;
}

// Where `memtap record` listens and an agent connects when neither is told otherwise.
constexpr const char* kDefaultSocketName = "monitor";

}  // namespace memtap
