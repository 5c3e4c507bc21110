// The agent's process-wide state.
//
// Hooks run on every application thread and have nowhere else to find their buffers
// and settings, so this is a global by necessity. It is constant-initialised: a hook
// that runs before our constructor (libc start-up, another library's constructor) sees
// valid defaults and records into buffers right away.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "agent/event_buffer.h"
#include "agent/sender/sender_api.h"
#include "common/process_end.h"

namespace memtap {

struct AgentState {
  BufferRegistry registry;
  std::atomic<bool> recording{true};  // false: hooks pass straight through
  bool lossless = false;              // MEMTAP_LOSSLESS=1: the application waits, never drops
  std::atomic<bool> stopped{false};   // the final flush has run (exit, _exit)
  // The flush before an exec has run and the sender is stopped until exec returns (it
  // failed): a fatal signal meanwhile has no flush left to ask for.
  std::atomic<bool> exec_flushed{false};
  memtap_sender_stop_fn sender_stop = nullptr;  // of the current sender's namespace
  memtap_sender_exec_fn sender_exec = nullptr;  // likewise
  SenderFds sender_fds;  // the descriptors the sender's namespace holds (the close() hook)
};

extern AgentState g_agent;

// Set while the agent's own code runs on this thread, so that what it allocates (dlmopen,
// stderr) is not traced.
extern __thread int tl_agent_busy __attribute__((tls_model("initial-exec")));

inline bool hooks_record() {
  return g_agent.recording.load(std::memory_order_relaxed) && tl_agent_busy == 0;
}

// Lifecycle (agent_main.cpp).
// Flush, Bye saying how the process ends (a ProcessEnd and its code); idempotent.
void agent_stop(ProcessEnd end, int32_t code);
void agent_after_fork_child(uint32_t parent_pid);  // in a fork() child
void agent_after_fork_parent(uint32_t child_pid, uint64_t fork_ts_ns);
// Around exec (hooks/exec_hooks.cpp): everything recorded so far sent and written out;
// true when it was, and then agent_after_failed_exec must follow if exec returns. Writes
// into `handoff_entry` the environment entry that carries this instance's last word to the
// new image (agent/exec_handoff.h); empty when there is none.
bool agent_before_exec(char* handoff_entry, size_t len);
void agent_after_failed_exec();
void context_after_fork_child();  // context_api.cpp: steps count from 1 again

}  // namespace memtap
