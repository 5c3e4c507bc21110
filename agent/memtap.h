/* The agent's C ABI: what a traced program (or the Python package, through ctypes)
 * may call. Every symbol the agent exports is either a hook or starts with memtap_.
 *
 * The context calls below record an event into the calling thread's buffer (the same
 * bounded, never-blocking path as the hooks) and return; without a monitor they cost a
 * record each. They are safe from any thread, and do nothing once the agent has stopped.
 * Text is interned first (memtap_intern) and then referred to by id, so a label used on
 * every step is sent once. */
#ifndef MEMTAP_AGENT_MEMTAP_H
#define MEMTAP_AGENT_MEMTAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The agent's version, e.g. "0.1.0". */
const char* memtap_agent_version(void);
/* 1 while the agent records events, 0 when disabled or stopped. */
int memtap_agent_active(void);

/* The id of `length` bytes of text (UTF-8, no NUL needed): the same text gives the same id
 * for the life of the process (and in its fork() children); 0 for empty text, while the
 * agent is not recording, for text over 1 MiB, or when the agent's string memory
 * (MEMTAP_STRING_MB, default 64 MiB) is exhausted (then the event that uses it carries no
 * text, and the loss is counted in the batch's droppedSoFar). */
uint32_t memtap_intern(const char* text, size_t length);

/* SYSTEM STEP: a training step begins. Steps are numbered 1, 2, ... per process (a fork()
 * child counts its own from 1). */
void memtap_step(void);
/* MSTX Mark with the text `text_id`. */
void memtap_mark(uint32_t text_id);
/* MSTX Range_start / Range_end: ranges may overlap; an end closes the latest open range of
 * its name in the process. */
void memtap_range_start(uint32_t name_id);
void memtap_range_end(uint32_t name_id);
/* Owner labels: this thread's allocations between a push and its pop carry the owner
 * (nested levels join with '@', outermost first: "model@activations"). */
void memtap_owner_push(uint32_t name_id);
void memtap_owner_pop(void);
/* OP_LAUNCH ATEN_START / ATEN_END: an operator runs on this thread; the blocks it allocates
 * are named after it. */
void memtap_op_start(uint32_t name_id);
void memtap_op_end(uint32_t name_id);
/* A Python tracer slice (memtap.tracer): `func_id` is "file(line): function", start and end
 * are CLOCK_MONOTONIC nanoseconds (Python's time.monotonic_ns()). */
void memtap_trace_slice(uint32_t func_id, uint64_t start_ns, uint64_t end_ns);

/* The framework's caching pool on CUDA device `device` (layer PTA): a pool that hands out
 * blocks carved from memory it got from the driver reports them here (memtap.torch does so
 * for PyTorch's CUDA caching allocator, through its trace tracker); the driver allocations
 * themselves are recorded by the CUDA hooks (HAL), so a pool must not report its segments as
 * blocks. Call from the thread that allocates or frees: owner labels, operators and stacks
 * apply to pool blocks as to host ones. `stream` is the CUDA stream (a handle; 0 for the
 * default stream). Safe to call while the pool holds its own lock: these record and return.
 *
 * memtap_pool_alloc: a block of `size` bytes at `addr` handed out.
 * memtap_pool_free_requested: its owner freed the block (Allocated drops).
 * memtap_pool_free_completed: the pool took it back (Active drops): right after the request,
 *   or later when another stream still used the block.
 * memtap_pool_state: what the pool holds on the device now: bytes in blocks handed out and
 *   bytes reserved (its segments); after a segment was obtained or released, or a sample.
 * memtap_pool_peaks: the most the pool has held on the device (its own counters: torch's
 *   memory_stats() allocated_bytes.all.peak, reserved_bytes.all.peak); call it right before
 *   the sampled memtap_pool_state it goes with, on the same thread: that state's SNAPSHOT
 *   row carries them (Attr max_allocated, max_reserved). */
void memtap_pool_alloc(int device, uint64_t addr, uint64_t size, uint64_t stream);
void memtap_pool_free_requested(int device, uint64_t addr, uint64_t stream);
void memtap_pool_free_completed(int device, uint64_t addr, uint64_t stream);
void memtap_pool_state(int device, uint64_t allocated_bytes, uint64_t reserved_bytes);
void memtap_pool_peaks(int device, uint64_t max_allocated_bytes, uint64_t max_reserved_bytes);

/* Python call stacks (MEMTAP_STACKS=python): the agent follows the calling thread's Python
 * frames from now on, with a C profile function it installs (PyEval_SetProfile), replacing
 * the thread's profiler. Call it with the GIL held, from the thread itself (the Python
 * package does, through ctypes.PyDLL: memtap._stacks.enable()). `skip_frames`: how many of
 * the innermost running frames will never report their return (1 when called from a
 * Python-level profile function, 0 otherwise). Returns 1 when installed, 0 when Python
 * stacks are off or the interpreter lacks what the agent needs. */
int memtap_python_stacks_thread_start(int skip_frames);

/* memtap's own frames out of the recorded Python stacks. `code` is a code object (a
 * PyObject*). Kind 1: its frames are left out with every frame they call (memtap's
 * TorchDispatchMode runs each operator, so the allocation happens under it); kind 2: its
 * frames are left out where they directly call one of kind 1 (a framework's plumbing around
 * the mode); kind 3: its frames alone are left out (a wrapper of memtap's around the
 * program's code, as the one around torch's import). At most 8 code objects. Call it with
 * the GIL held (ctypes.PyDLL, as the Python package does: memtap._stacks.hide()). Returns 1
 * when noted, 0 when Python stacks are off. */
int memtap_python_stacks_hide(void* code, int kind);

#ifdef __cplusplus
}
#endif

#endif
