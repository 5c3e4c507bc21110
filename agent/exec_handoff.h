// An instance's last word, carried across exec() to the image that replaces it.
//
// exec leaves no room for a Bye: the exec flush has closed the socket, and what it says
// would have to be taken back if exec failed. So what the old image handed to the wire and
// dropped (the records its flush gave up when the monitor did not take them in time
// included) travels in the new image's environment, as
//   MEMTAP_EXECED_FROM=<pid>,<instance id, hex>,<events sent>,<events dropped>,<secret, hex>
// and the new image's Hello says it (Hello.execedFrom), so that the monitor counts for the
// old instance what a Bye would have. The old instance's secret (wire.capnp's
// instanceSecret) goes with it, so that nobody else's word counts for that instance: the
// environment is as private as the process's memory (/proc/PID/environ asks the same
// permission as ptrace). Only the same pid takes it (a child that inherits the
// variable from a program that kept it ignores it), and the agent takes it out of the
// environment before the program runs. Written and read without the allocator: exec may be
// called in a signal handler, and the constructor runs before the program's heap is ours.
#pragma once

#include <cstddef>
#include <cstdint>

#include "agent/sender/sender_api.h"

namespace memtap {

constexpr char kExecHandoffName[] = "MEMTAP_EXECED_FROM";
constexpr size_t kExecHandoffEntryBytes = 128;  // the longest entry, NUL included, fits

// The environment entry ("MEMTAP_EXECED_FROM=..."), NUL-terminated; false if `len` is short.
bool format_exec_handoff(uint32_t pid, const MemtapExecHandoff& handoff, char* out, size_t len);

// The variable's value; false (and `out` untouched) when it is malformed or names another pid.
bool parse_exec_handoff(const char* value, uint32_t pid, MemtapExecHandoff* out);

// What the previous image of this process left in the environment (said == 0: nothing, or
// not for this pid); the variable is unset either way.
MemtapExecHandoff take_exec_handoff(uint32_t pid);

// Whether an environment entry is a handoff entry (an older one, to leave out of a new
// environment).
bool is_exec_handoff_entry(const char* entry);

}  // namespace memtap
