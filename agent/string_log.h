// Interned text of one agent instance (process): owner labels, marks, range and operator
// names, call stacks, tracer function names. Each distinct text gets an id once; events
// refer to it by EventRecord::string_id, and the sender sends every new text once, in the
// batch's `strings` (wire.capnp), before the events that use it.
//
// Callable from the hooks: no lock, no allocation through the hooked allocator, no syscall
// on the common path (memory is reserved once, with mmap). Bounded: when its memory is
// used up, intern returns 0 and counts the loss.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memtap {

// The id of `length` bytes of `text`; the same text gives the same id for the life of the
// process (a fork() child keeps its parent's ids, and sends them again to its monitor).
// 0 for empty text, or when the log is full.
uint32_t string_log_intern(const char* text, size_t length);

}  // namespace memtap
