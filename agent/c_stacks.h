// C call stacks of large allocations (MEMTAP_STACKS=c), opt-in.
//
// Only return addresses are taken here (agent/unwind.h): the addresses are cached per thread
// (same return addresses: same string id), and a new stack is interned as its addresses'
// text (common/address_stack.h), innermost first, the agent's own frames left out. Nothing
// is symbolised in the process: the sender reports the loaded modules (wire.capnp
// LoadedModule) and the monitor symbolises, off the training process's CPU, with the
// objects' debug information where they have it.
//
// Locks it may take, which is why it is opt-in and off the stacks-off path:
//  - the unwinder may load what it needs on its first call (glibc's backtrace() dlopens
//    libgcc_s: the loader lock, allocations); c_stacks_warm_up() does that at agent start,
//    with the agent's allocations untraced.
//  - the unwinder finds each frame's unwind table with _dl_find_object (glibc >= 2.35 with
//    libgcc >= 12, as on Debian 12: lock-free); with older pairs it calls dl_iterate_phdr,
//    which takes the loader's dl_load_write_lock.
#pragma once

#include <cstdint>

namespace memtap {

// At agent start, with tl_agent_busy set: loads the unwinder, notes the agent's own code range.
void c_stacks_warm_up();

// The interned C stack of the calling thread (callers' frames only), or 0. Must run with
// tl_agent_busy set: what the unwinder may allocate is not traced.
uint32_t c_stack_capture();

}  // namespace memtap
