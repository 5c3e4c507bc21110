// Stepping a thread back for the program being traced: the agent's sender, the monitor's
// threads while the program runs, the writer and its checkpointer at all times.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cerrno>

namespace memtap {

// Raises thread `tid`'s nice value to `nice` (0: the calling thread) unless it is already
// that far back; never lowers it. Nice is per thread on Linux, and raising it needs no
// privilege. True when the value was changed.
inline bool step_back(pid_t tid, int nice) {
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, id_t(tid));
  if (errno == 0 && current >= nice) return false;
  return setpriority(PRIO_PROCESS, id_t(tid), nice) == 0;
}

}  // namespace memtap
