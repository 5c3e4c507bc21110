// C call stacks of large allocations (MEMTAP_STACKS=c), opt-in.
//
// Unwinding is glibc's backtrace() (libgcc_s's DWARF unwinder); the addresses are cached per
// thread (same return addresses: same string id, no symbolisation), and a new stack is
// symbolised with dladdr into one "module(symbol+0xoff) [0xaddr]" line a frame, innermost
// first, the agent's own frames left out, then interned.
//
// Locks it may take, which is why it is opt-in and off the stacks-off path:
//  - backtrace() loads libgcc_s on its first call (dlopen: the loader lock, allocations);
//    c_stacks_warm_up() does that at agent start, with the agent's allocations untraced.
//  - the unwinder finds each frame's unwind table with _dl_find_object (glibc >= 2.35 with
//    libgcc >= 12, as on Debian 12: lock-free); with older pairs it calls dl_iterate_phdr,
//    which takes the loader's dl_load_write_lock.
//  - dladdr, only for a stack not seen before on this thread, takes the loader's recursive
//    dl_load_lock: a thread that is inside dlopen delays it, nothing deadlocks (the hook
//    holds no lock of its own or of malloc's when it unwinds).
// Symbols are what dladdr sees: exported (dynamic) symbols. Functions of an executable
// linked without -rdynamic, and static functions, show as "module(+0xoff)".
#pragma once

#include <cstdint>

namespace memtap {

// At agent start, with tl_agent_busy set: loads the unwinder, notes the agent's own code range.
void c_stacks_warm_up();

// The interned C stack of the calling thread (callers' frames only), or 0. Must run with
// tl_agent_busy set: what it allocates (dladdr's first use of a module) is not traced.
uint32_t c_stack_capture();

}  // namespace memtap
