// What a test that gave up waiting can say about the processes it waited for.
//
// A process killed at its deadline leaves one question: was it slow, or stuck, and where?
// The processes of a run are found by the pipe they write to (the test's stdout or stderr
// pipe), which also finds children that outlived their parent (a DataLoader worker whose
// interpreter is gone). Each is described from /proc: state, CPU time, and each thread's
// name, state and the kernel function it sleeps in; with gdb installed, its stacks too.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace memtap::e2e {

// The processes other than this one that hold the pipe `fd` is an end of, by pid.
std::vector<pid_t> pipe_holders(int fd);

// The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), or 0 when the process is gone.
char process_state(pid_t pid);

// `pids` and their descendants, zombies included (a child that exited, not yet reaped, holds
// no pipe but tells that its parent has not looked).
std::vector<pid_t> with_children(std::vector<pid_t> pids);

// A few lines per process, for a failure message: taken before the processes are killed.
std::string describe_stuck(const std::vector<pid_t>& pids);

}  // namespace memtap::e2e
