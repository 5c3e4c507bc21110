// Who this process is, gathered without allocating (the agent's constructor runs before
// the application's and must not disturb its heap).
#pragma once

#include <cstddef>
#include <cstdint>

namespace memtap {

struct ProcessIdentity {
  uint32_t pid;
  uint32_t ppid;
  uint64_t instance_id;      // random: pids are reused, instances are not
  uint64_t instance_secret;  // random, never shown: what proves a message is this instance's
  char hostname[256];
  char cmdline[32768];  // NUL-separated, truncated if longer
  size_t cmdline_len;
  int32_t rank;  // -1 when the launcher set none
  int32_t world_size;
};

void read_process_identity(ProcessIdentity* id);

}  // namespace memtap
