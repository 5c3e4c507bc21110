// Python call stacks of large allocations (MEMTAP_STACKS=python), without the GIL.
//
// The allocator hook may run while its thread does not hold the GIL (PyTorch releases it
// around operators), so it cannot ask the interpreter for the stack. Instead, as memray
// does, each Python thread follows its own frames: memtap_python_stacks_thread_start()
// installs a C profile function (PyEval_SetProfile) on the calling thread, which pushes a
// frame on a per-thread shadow stack at every call (PyTrace_CALL, also a generator's
// resumption) and pops it at every return (PyTrace_RETURN, also a yield and an exception
// leaving the frame). Each entry is the frame object and its code's "file" and "function"
// text, resolved once per code object inside the profile function, where the GIL is held.
//
// At an allocation, python_stack_capture() walks the shadow stack innermost first and asks
// each frame for its current line (PyFrame_GetLineNumber, which only reads the frame and
// its code's line table). Only the thread's own frames are read, and they cannot change or
// go away while that thread is in the allocator. The (code, line) pairs are hashed; a stack
// seen before on this thread gives its string id without formatting, a new one is written
// "file(line): function", one frame a line, innermost first, into a per-thread buffer and
// interned.
//
// The interpreter's C API is resolved at run time (dlsym(RTLD_DEFAULT)): the agent builds
// without Python headers and works with the interpreter that runs (3.9 and later; the
// functions used are in the stable ABI or the limited API of those versions).
//
// memtap's own frames stay out: memtap_python_stacks_hide() names code objects whose
// frames a capture leaves out, with the frames they call (memtap's TorchDispatchMode, which
// runs every operator under --torch-ops) or only where they call such a frame (torch's
// plumbing around it). A capture then keeps the frames outside the outermost hidden one.
//
// When the profile function is removed (sys.setprofile / threading.setprofile by another
// profiler, the thread state cleared at thread exit or interpreter shutdown), a destructor
// on the object passed to PyEval_SetProfile marks the thread's shadow stack dead, and the
// thread has no Python stacks until memtap_python_stacks_thread_start() runs on it again.
#pragma once

#include <cstdint>

namespace memtap {

// The interned Python stack of the calling thread, or 0 (no Python frames followed on this
// thread). Must run with tl_agent_busy set.
uint32_t python_stack_capture();

}  // namespace memtap
