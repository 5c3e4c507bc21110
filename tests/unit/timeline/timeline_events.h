// Builders for the MemEvents the timeline tests feed, so each test reads as the sequence
// of allocations it stands for.
#pragma once

#include <cstdint>
#include <vector>

#include "monitor/engine/timeline/timeline.h"
#include "monitor/model/mem_event.h"

namespace memtap::timeline::testing_events {

inline MemEvent block(MemEventKind kind, int64_t ts, uint32_t pid, int32_t device, Layer layer,
                      uint64_t addr, uint64_t size) {
  MemEvent e;
  e.kind = kind;
  e.ts_ns = ts;
  e.pid = pid;
  e.device = device;
  e.layer = layer;
  e.addr = addr;
  e.size_bytes = size;
  return e;
}

inline MemEvent malloc_at(int64_t ts, uint32_t pid, int32_t device, Layer layer, uint64_t addr,
                          uint64_t size) {
  return block(MemEventKind::kMalloc, ts, pid, device, layer, addr, size);
}

inline MemEvent free_at(int64_t ts, uint32_t pid, int32_t device, Layer layer, uint64_t addr,
                        uint64_t size) {
  return block(MemEventKind::kFree, ts, pid, device, layer, addr, size);
}

inline MemEvent mmap_at(int64_t ts, uint32_t pid, uint64_t addr, uint64_t size, bool unmap) {
  MemEvent e = block(unmap ? MemEventKind::kFree : MemEventKind::kMalloc, ts, pid, kHostDevice,
                     Layer::kHost, addr, size);
  e.is_mmap = true;
  return e;
}

inline MemEvent pta(MemEventKind kind, int64_t ts, uint32_t pid, int32_t device, uint64_t addr,
                    uint64_t size, int64_t used, int64_t total, uint32_t owner = 0,
                    uint64_t stream = 0) {
  MemEvent e = block(kind, ts, pid, device, Layer::kPta, addr, size);
  e.pool_used = used;
  e.pool_total = total;
  e.owner = owner;
  e.stream = stream;
  return e;
}

inline MemEvent snapshot_at(int64_t ts, uint32_t pid, int32_t device, int64_t app_reserved,
                            int64_t total = kUnknown) {
  MemEvent e;
  e.kind = MemEventKind::kSnapshot;
  e.ts_ns = ts;
  e.pid = pid;
  e.device = device;
  e.snap_app_reserved = app_reserved;
  e.snap_total = total;
  return e;
}

// A PTA FREE whose block stays Active until its FREE_COMPLETED (another stream used it).
inline MemEvent pending_free_at(int64_t ts, uint32_t pid, int32_t device, uint64_t addr,
                                uint64_t size) {
  MemEvent e = block(MemEventKind::kFree, ts, pid, device, Layer::kPta, addr, size);
  e.free_pending = true;
  return e;
}

inline MemEvent completed_at(int64_t ts, uint32_t pid, int32_t device, uint64_t addr,
                             uint64_t size) {
  return block(MemEventKind::kFreeCompleted, ts, pid, device, Layer::kPta, addr, size);
}

// A device pool's SNAPSHOT (memtap_pool_state, or torch.cuda.memory_stats() at a step).
inline MemEvent pool_snapshot_at(int64_t ts, uint32_t pid, int32_t device, int64_t allocated,
                                 int64_t reserved) {
  MemEvent e;
  e.kind = MemEventKind::kSnapshot;
  e.ts_ns = ts;
  e.pid = pid;
  e.device = device;
  e.layer = Layer::kPta;
  e.snap_allocated = allocated;
  e.snap_reserved = reserved;
  return e;
}

inline void feed(Timeline& t, const std::vector<MemEvent>& events) {
  t.add(events.data(), events.size());
}

// Every point of a series (the window must hold them all).
inline std::vector<CurvePoint> all_points(const Timeline& t, SeriesId id) {
  return t.points(id, INT64_MIN, INT64_MAX, SIZE_MAX).points;
}

}  // namespace memtap::timeline::testing_events
