// Before a library is unloaded (dlclose), the sender reports it, so that the C stacks taken
// inside it can be symbolised in the monitor.
//
// The sender reports loaded modules once a drain round (agent/sender/module_scan.h): a
// library loaded, used and unloaded again within one round (a plugin loaded for one call,
// a test's dlopen loop) would otherwise never be reported, and every stack in it would stay
// "?? [0xaddr]". With C stacks on, dlclose first asks the sender for a round that starts
// after the request and waits for it (at most kModuleScanWaitNs: a sender held off its
// core, or no monitor, must not stall the program).
#pragma once

#include <cstdint>

#include "agent/sender/sender_api.h"

namespace memtap {

inline constexpr uint64_t kModuleScanWaitNs = 200'000'000;

// Shared with the sender (MemtapSenderConfig::module_scan). Process-wide: the dlclose hook
// has nowhere else to find it; a fork() child's sender takes it over.
extern ModuleScanWords g_module_scan;

// From the dlclose hook, before the real dlclose.
void report_modules_before_unload();

}  // namespace memtap
