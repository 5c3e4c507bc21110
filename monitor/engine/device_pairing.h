// Live device (HAL), page-locked host (HOST_PINNED) and framework pool (PTA) blocks of one
// process, the rules that pair each of their FREEs with its MALLOC, and the blocks an OOM
// names.
//
// Each layer has a table of its own, apart from the heap's (heap_pairing.h), so a HAL block
// and a HOST block at the same address never pair: the stand-in CUDA libraries of the tests
// hand out device memory at host addresses, and nothing promises that a real process's
// host and device pointers never meet. Device addresses are unique across a process's
// devices (CUDA's unified address space), so one table holds every device's blocks, and a
// FREE takes the device of the block it frees, not the device current when it was called.
//
// A device block keeps more than a heap block (its name, stacks and device) so that an OOM
// can list the blocks live at that moment as their MALLOC rows described them. Few blocks
// live at the driver's level (a framework's pool holds large segments), so the table is a
// plain hash map. A fork() child inherits none of them: CUDA cannot be used in a fork child,
// so what the parent holds through it stays the parent's.
//
// PTA blocks (a framework's caching pool, docs/design-notes.md, monitor/engine "Pool blocks of a
// live agent") are the tensors: a table of their own, every device's as for HAL. A pool block's
// free has two steps: its owner frees it (FREE; the device's Allocated drops) and the pool takes it
// back (Active drops), at once or, when another stream still used it, later; in between
// the block waits in `pta_pending`. Per device the table keeps the bytes of its live blocks
// and the reserved bytes the pool last reported: each PTA MALLOC/FREE row says them (Attr
// used and total), as msMemScope's PTA rows do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "monitor/engine/heap_pairing.h"
#include "monitor/model/dump_row.h"

namespace memtap {

struct DeviceBlock {
  uint64_t size_bytes = 0;
  uint64_t allocation_id = 0;
  // Session string ids, as on the block's MALLOC row.
  uint32_t owner = 0;
  uint32_t name = 0;
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
  int32_t device = kDumpNoDevice;  // HAL, PTA: the CUDA ordinal; HOST_PINNED: none (host memory)
};

enum class DeviceLayer : uint8_t { kHal, kHostPinned };

// A device's pool as its PTA rows describe it.
struct PoolFigures {
  // Bytes in the device's live PTA blocks: Attr used, clamped to 2^63 - 1. 128 bits, so that
  // it stays exact whatever the blocks (decode keeps each below 2^63): three such blocks
  // would wrap 64 bits, and a saturated sum would be wrong once some of them are freed.
  unsigned __int128 live_bytes = 0;
  int64_t reserved_bytes = -1;  // the latest poolState's (Attr total); -1: none came yet
  // A poolPeaks held for the device's next poolState (max allocated, max reserved); -1: none.
  int64_t held_max_allocated = -1;
  int64_t held_max_reserved = -1;
};

struct DeviceTables {
  std::unordered_map<uint64_t, DeviceBlock> hal;  // by address, every device's
  std::unordered_map<uint64_t, DeviceBlock> pinned;
  std::unordered_map<uint64_t, DeviceBlock> pta;          // handed out, by address
  std::unordered_map<uint64_t, DeviceBlock> pta_pending;  // freed, not yet back in the pool
  std::map<int32_t, PoolFigures> pools;                   // by device: few
};

// What one device event says beyond who and when.
struct DeviceCall {
  uint64_t addr = 0;
  uint64_t size_bytes = 0;         // MALLOC: the block's size
  int32_t device = kDumpNoDevice;  // the device current at the call (HAL only)
  bool has_stream = false;         // a deviceStream record went before it on its thread
  uint64_t stream = 0;
};

// A MALLOC row (Name: context.name); a block still live at that address in that layer is
// first closed by a synthetic FREE (counted in lost_frees).
void pair_device_malloc(DeviceTables& tables, DeviceLayer layer, const RowStamp& stamp,
                        const DeviceCall& call, const AllocContext& context, PairingOutput& out);

// A FREE row with the live block's size, id, owner and device; size 0, id 0 and the call's
// device when no block of that layer is live there (counted in unmatched_frees).
void pair_device_free(DeviceTables& tables, DeviceLayer layer, const RowStamp& stamp,
                      const DeviceCall& call, PairingOutput& out);

// A PTA MALLOC row on call.device (Name: context.name, else none), with the device's used
// and total after it. A block still live at that address is first closed by a synthetic
// FREE, and one still pending there by a synthetic FREE_COMPLETED (each counted in
// lost_frees: its FREE or its completion was lost).
void pair_pool_malloc(DeviceTables& tables, const RowStamp& stamp, const DeviceCall& call,
                      const AllocContext& context, PairingOutput& out);

// How soon after its free_requested a block's free_completed, next on the same thread, must
// come to be taken as the same free call's (the pool took the block back at once). Order
// alone cannot tell: PyTorch completes a block freed while another stream used it in the
// thread's next allocator call (process_events at its next malloc), so a pending free and its
// late completion can be next to each other as an immediate one's are. Time tells only
// roughly: one free call makes both within a few microseconds, but not always. PyTorch's own
// snapshots of single-stream programs have them up to 346 us apart (a stack gathered per
// entry), and a program beside busy cores is preempted between them for a scheduler slice
// (the stand-in GPU smoke run beside one busy loop: 1 run in 4 had such a free at 20 us).
// Taken for pending, each says "waited for another stream" of a program with one stream.
// The price of 10 ms: a real pending free whose completion is the thread's very next event
// (no kernel launch, no malloc between) within 10 ms shows as immediate, a blip of Active
// that short lost.
constexpr int64_t kPoolFreeFoldNs = 10'000'000;

// A PTA FREE row with the live block's size, id, owner and device, and that device's used
// and total after it; size 0, id 0 and the call's device when no PTA block is live there
// (counted in unmatched_frees). `completed`: the pool took the block back at once (its
// completion was folded into this FREE); otherwise the row says free_pending and the block
// waits for complete_pool_free.
void pair_pool_free(DeviceTables& tables, const RowStamp& stamp, const DeviceCall& call,
                    bool completed, PairingOutput& out);

// The pool took back a block whose FREE said free_pending: a FREE_COMPLETED row (Ptr, size,
// the block's device). A completion of no pending block writes nothing and counts in
// unmatched_frees.
void complete_pool_free(DeviceTables& tables, const RowStamp& stamp, const DeviceCall& call,
                        PairingOutput& out);

// A poolState: the SNAPSHOT row of `device`'s pool (Event Type PTA; pool_used: allocated,
// pool_total: reserved); its reserved bytes are the device's PTA total from now on. The
// peaks hold_pool_peaks held for the device go into the row (has_pool_peaks) and are let go.
void pool_state_row(DeviceTables& tables, const RowStamp& stamp, int32_t device,
                    int64_t allocated_bytes, int64_t reserved_bytes, std::vector<DumpRow>& rows);

// A poolPeaks: the pool's own peaks on `device` (both below 2^63), held for its next
// poolState, whose row carries them; a later poolPeaks before that state replaces them.
void hold_pool_peaks(DeviceTables& tables, int32_t device, int64_t max_allocated_bytes,
                     int64_t max_reserved_bytes);

// The OOM_TOP_ALLOC rows for an OOM on `device`: its kOomTopBlocks largest live PTA blocks
// when it has any (the tensors), else its largest live HAL blocks; largest first (equal
// sizes: the older allocation first), each with its address, size, id, owner, name and
// stacks.
inline constexpr size_t kOomTopBlocks = 10;
void append_oom_top_rows(const DeviceTables& tables, const RowStamp& stamp, int32_t device,
                         std::vector<DumpRow>& rows);

}  // namespace memtap
