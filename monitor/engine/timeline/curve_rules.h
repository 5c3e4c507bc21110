// What the four curves (docs/design-notes.md, monitor/engine/timeline "The four curves") are made
// of, for one process on one device, given the running totals the timeline keeps. Pure functions
// over plain data, so the rules can be read (and tested) apart from the bookkeeping.
//
//   Allocated     framework blocks in use: the live bytes of the framework layers (PTA,
//                 PTA_WORKSPACE, ATB, MINDSPORE) once the scope has any; before that, on a
//                 device that has had pool samples (below) the newest sample's allocated,
//                 else on a device the live HAL bytes, on the host the live heap and
//                 pinned bytes (HOST not mmap, HOST_PINNED, and HAL: msMemScope's 2025
//                 files record page-locked host memory as HAL on device `host`, where
//                 newer ones write HOST_PINNED on `cpu` for the same blocks).
//   Reserved      what the pool holds: the framework layers' pool_total (Attr "total") where
//                 they report it (a framework layer that never does counts its live bytes);
//                 without any, on the host heap + anonymous mappings, on a device the live
//                 HAL bytes, never less than Allocated (a pool holds at least what it hands
//                 out; less means the driver allocations predate the recording).
//
// A device's pool SNAPSHOT (layer PTA, snap_reserved / snap_allocated: memtap_pool_state,
// after the pool got or gave back a segment, or torch.cuda.memory_stats() sampled at each
// step) sets PTA's pool_total to its reserved, as a PTA event's Attr total does, so
// Reserved follows a segment change at once (empty_cache drops it with no block event).
// Its allocated counts only on a device with no framework block yet: there the samples are
// all that is known of the pool (the fallback where no trace tracker could be attached),
// so Allocated and Reserved follow them. The HAL bytes that stood in for Allocated before
// the first sample were the driver's, not the pool's: as at a first framework block,
// Allocated's history is rewritten, here to the first sample's value (the samples come at
// the end of each step; the pool held the model's weights before the first). Once a PTA
// block comes its blocks rule Allocated, and the samples only Reserved.
//   Active        Allocated plus the framework blocks freed but pending on another stream:
//                 a FREE with free_pending drops the block from Allocated and adds its
//                 size to the pending bytes; its FREE_COMPLETED (kFreeCompleted, same
//                 address) takes them out. A completion with no pending block changes
//                 nothing and counts with the clamped frees (a lost FREE, or a recording
//                 that began in between). free_pending is honoured on framework layers
//                 only. Where nothing is pending Active equals Allocated (the host always).
//   App Reserved  what the process holds on the device: the newest SNAPSHOT app_reserved
//                 (the host's RSS samples) once there is one; else on a device that has HAL
//                 events the live HAL bytes; else Reserved.
//   Fragmentation Reserved - Allocated, at least 0.
//
// Host means a device id < 0 ("cpu"/"host", and the "N/A" of events that name none).
#pragma once

#include <array>
#include <cstdint>

#include "monitor/engine/saturating.h"  // sizes come from untrusted files: totals saturate
#include "monitor/model/mem_event.h"

namespace memtap::timeline {

// Live bytes are kept per slot: one per Layer, and HOST anonymous mappings apart from the
// heap.
constexpr int kLayerSlots = 9;
constexpr int kHostMmapSlot = 8;

inline int layer_slot(Layer layer, bool is_mmap) {
  if (layer == Layer::kHost && is_mmap) return kHostMmapSlot;
  // A value past the enum (a reader that let one through) must not index past the arrays.
  return int(layer) <= int(Layer::kOther) ? int(layer) : int(Layer::kOther);
}

constexpr uint16_t kFrameworkSlots = (1u << int(Layer::kPta)) | (1u << int(Layer::kPtaWorkspace)) |
                                     (1u << int(Layer::kAtb)) | (1u << int(Layer::kMindspore));

inline bool is_framework_slot(int slot) {
  return (kFrameworkSlots >> slot) & 1u;
}

// The host's memory in use (its Allocated before any framework block): the heap without
// mappings and page-locked host buffers, HOST_PINNED, or HAL as msMemScope's 2025 files
// spell those on device `host` (above).
constexpr uint16_t kHostHeapSlots =
    (1u << int(Layer::kHost)) | (1u << int(Layer::kHostPinned)) | (1u << int(Layer::kHal));

// Which blocks Allocated counts, and so which blocks Group By Owner and Stream split.
enum class BlockClass : uint8_t { kFramework, kDriver, kHostHeap, kNone };
constexpr int kBlockClasses = 3;  // the classes before kNone

// `host`: the scope is the host's, where the driver's blocks are pinned host memory (above).
inline BlockClass block_class(int slot, bool host) {
  if (is_framework_slot(slot)) return BlockClass::kFramework;
  if (host && ((kHostHeapSlots >> slot) & 1u)) return BlockClass::kHostHeap;
  if (slot == int(Layer::kHal)) return BlockClass::kDriver;
  if (slot == int(Layer::kHost) || slot == int(Layer::kHostPinned)) return BlockClass::kHostHeap;
  return BlockClass::kNone;
}

struct ScopeTotals {
  std::array<int64_t, kLayerSlots> live_bytes{};
  uint16_t seen_slots = 0;  // bit per slot that has had a MALLOC or FREE
  std::array<int64_t, kLayerSlots> pool_total_bytes{};  // framework slots, newest Attr total
  uint16_t pool_total_slots = 0;                        // bit per slot that reported one
  int64_t app_sample_bytes = kUnknown;                  // newest SNAPSHOT app_reserved
  int64_t pool_sample_allocated = kUnknown;             // newest pool SNAPSHOT's allocated
  int64_t pending_bytes = 0;  // framework blocks freed, their FREE_COMPLETED not yet come
};

// Whether a SNAPSHOT is a device's pool figures (curve rules above).
inline bool is_pool_snapshot(const MemEvent& e) {
  return e.kind == MemEventKind::kSnapshot && e.device >= 0 && e.layer == Layer::kPta;
}

struct CurveValues {
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t active = 0;
  int64_t app_reserved = 0;
  int64_t fragmentation = 0;
};

// Whether Allocated is the framework's: its blocks, or its samples before any block.
inline bool has_framework_pool(const ScopeTotals& t) {
  return (t.seen_slots & kFrameworkSlots) != 0 || t.pool_sample_allocated != kUnknown;
}

BlockClass allocated_class(const ScopeTotals& totals, bool host);
CurveValues derive_curves(const ScopeTotals& totals, bool host);

}  // namespace memtap::timeline
