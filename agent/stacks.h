// Call stacks on large allocations (MEMTAP_STACKS, MEMTAP_STACK_MIN_SIZE).
//
// Read once when the agent loads:
//   MEMTAP_STACKS          comma list of "python" and "c" (default: none)
//   MEMTAP_STACK_MIN_SIZE  bytes; allocations and anonymous mappings of at least this size
//                          get the stacks (default 1048576, 1 MiB; 0: every allocation)
//
// The hooks test one constant, g_stack_min_size, which is UINT64_MAX while stacks are off:
// with stacks off the hot path pays one compare that is never taken. When it is taken, the
// hook calls record_call_stacks() before it records the allocation, which writes a
// kPythonStack and/or kCStack record (the interned text's id) that the monitor attaches to
// the thread's next malloc / mmap record.
#pragma once

#include <cstdint>

namespace memtap {

// Allocations of at least this many bytes get stacks; UINT64_MAX: stacks off. Process-wide,
// set once at load (before any thread but the loader's runs) and inherited by fork children.
extern uint64_t g_stack_min_size;

struct StackSettings {
  bool python = false;
  bool c = false;
};
extern StackSettings g_stack_settings;

// What MEMTAP_STACKS asks for. The sender's start reads it itself: constructors of different
// files run in no set order, so g_stack_settings may not be filled yet.
StackSettings stack_settings_from_env();

// Writes the stack records of the calling thread's allocation that is about to be recorded.
// Called from the hooks with hooks_record() true; out of line and cold.
void record_call_stacks();

}  // namespace memtap
