// Why the agent cannot enter a program, when the program's file says so: `memtap run`
// loads the agent with LD_PRELOAD, which only the dynamic loader reads, and which it
// ignores for setuid and setgid programs run by another user.
#pragma once

#include <string>

namespace memtap {

// For an executable file at `path` (resolved, e.g. by resolve_program): "" when nothing in
// it stops LD_PRELOAD, else the reason in words ("it is statically linked: ..."). A script
// ("#!") is judged by its interpreter.
std::string preload_obstacle(const std::string& path);

}  // namespace memtap
