// Loading the sender library into a link namespace of its own and starting it.
#pragma once

#include "agent/sender/sender_api.h"

namespace memtap {

// dlmopen(LM_ID_NEWLM) of libmemtap_sender.so from the agent's own directory, then
// memtap_sender_start(config). Each call makes a new namespace: a fork() child cannot
// reuse its parent's, whose threads (and maybe locks) did not survive the fork.
// Returns the stop function and sets *exec (both nullptr, with a message in error, when
// it fails).
memtap_sender_stop_fn load_and_start_sender(const MemtapSenderConfig& config,
                                            memtap_sender_exec_fn* exec, char* error,
                                            size_t error_len);

}  // namespace memtap
