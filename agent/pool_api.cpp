// The framework pool's C ABI (agent/memtap.h memtap_pool_*): the blocks a caching allocator
// (PyTorch's, through memtap.torch's trace tracker) hands out of the memory it got from the
// driver, layer PTA (wire.capnp poolMalloc .. poolPeaks).
//
// The caller usually holds its own lock (torch's allocator calls its trace tracker under
// it), so each call records on the calling thread through the hooks' own path and returns:
// no lock, no syscall, no allocation (waiting only under MEMTAP_LOSSLESS, as every record
// does); nothing when the agent is not recording or the thread is the agent's own.
#include <cstdint>

#include "agent/agent_state.h"
#include "agent/event_buffer_writer.h"
#include "agent/event_clock.h"
#include "agent/memtap.h"
#include "agent/stacks.h"

#define MEMTAP_EXPORT extern "C" __attribute__((visibility("default")))

namespace memtap {

namespace {

// A CUDA ordinal travels as a UInt16; anything else (a negative "no device") records
// nothing.
inline bool pool_device(int device, uint16_t* out) {
  if (device < 0 || device > UINT16_MAX) return false;
  *out = static_cast<uint16_t>(device);
  return true;
}

// A block event: the stream first, as the CUDA hooks record a call with a stream (always:
// the default stream's 0 too, so the monitor never takes an earlier call's), then the
// block, both at one time. An allocation large enough gets its stacks before either, as
// cuda_note_malloc does.
void record_pool_block(EventKind kind, int device, uint64_t addr, uint64_t size_bytes,
                       uint64_t stream) {
  uint16_t dev;
  if (!hooks_record() || !pool_device(device, &dev)) return;
  if (kind == EventKind::kPoolMalloc && __builtin_expect(size_bytes >= g_stack_min_size, 0)) {
    record_call_stacks();
  }
  const uint64_t ts = event_clock_now();
  record_device_event(&g_agent.registry, g_agent.lossless, EventKind::kDeviceStream, dev, stream, 0,
                      ts, 0);
  record_device_event(&g_agent.registry, g_agent.lossless, kind, dev, addr, size_bytes, ts, 0);
}

// A pool's figures on a device (poolState, poolPeaks): two byte counts, no stream.
void record_pool_figures(EventKind kind, int device, uint64_t addr, uint64_t size_bytes) {
  uint16_t dev;
  if (!hooks_record() || !pool_device(device, &dev)) return;
  record_device_event(&g_agent.registry, g_agent.lossless, kind, dev, addr, size_bytes,
                      event_clock_now(), 0);
}

}  // namespace

}  // namespace memtap

using memtap::EventKind;
using memtap::record_pool_block;

MEMTAP_EXPORT void memtap_pool_alloc(int device, uint64_t addr, uint64_t size, uint64_t stream) {
  record_pool_block(EventKind::kPoolMalloc, device, addr, size, stream);
}

MEMTAP_EXPORT void memtap_pool_free_requested(int device, uint64_t addr, uint64_t stream) {
  record_pool_block(EventKind::kPoolFree, device, addr, 0, stream);
}

MEMTAP_EXPORT void memtap_pool_free_completed(int device, uint64_t addr, uint64_t stream) {
  record_pool_block(EventKind::kPoolFreeCompleted, device, addr, 0, stream);
}

MEMTAP_EXPORT void memtap_pool_state(int device, uint64_t allocated_bytes,
                                     uint64_t reserved_bytes) {
  memtap::record_pool_figures(EventKind::kPoolState, device, allocated_bytes, reserved_bytes);
}

MEMTAP_EXPORT void memtap_pool_peaks(int device, uint64_t max_allocated_bytes,
                                     uint64_t max_reserved_bytes) {
  memtap::record_pool_figures(EventKind::kPoolPeaks, device, max_allocated_bytes,
                              max_reserved_bytes);
}
