// Stepping a thread back for the program being traced: the agent's sender. (The monitor's
// threads pace themselves instead, common/cpu_share.h: a raised nice value cannot be lowered
// again once the program has ended.)
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cerrno>

namespace memtap {

// Where the sender inside the program stands by default (MEMTAP_SENDER_NICE). 19 is the lowest
// priority there is: a nice-19 thread beside a busy nice-0 thread gets about 1.5 % of the core
// (CFS/EEVDF weights 15 against 1024); at nice 10 (weight 110) it got about 10 %, which a
// two-thread allocation storm on two cores paid for (tests/bench/RESULTS.md, "Issue 5, fifth
// pass"). The work is not lost, only deferred: records wait in the agent's bounded buffers and the
// monitor catches up whenever the program leaves a core idle, or at its end.
constexpr int kBehindTheProgramNice = 19;

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
