// Live device (HAL) and page-locked host (HOST_PINNED) blocks of one process, the rules that
// pair each of their FREEs with its MALLOC, and the blocks an OOM names.
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
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "monitor/engine/dump_row.h"
#include "monitor/engine/heap_pairing.h"

namespace memtap {

struct DeviceBlock {
  uint64_t size_bytes = 0;
  uint64_t allocation_id = 0;
  // Session string ids, as on the block's MALLOC row.
  uint32_t owner = 0;
  uint32_t name = 0;
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
  int32_t device = kDumpNoDevice;  // HAL: the CUDA ordinal; HOST_PINNED: none (host memory)
};

enum class DeviceLayer : uint8_t { kHal, kHostPinned };

struct DeviceTables {
  std::unordered_map<uint64_t, DeviceBlock> hal;  // by address, every device's
  std::unordered_map<uint64_t, DeviceBlock> pinned;
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

// The OOM_TOP_ALLOC rows for an OOM on `device`: its kOomTopBlocks largest live HAL blocks,
// largest first (equal sizes: the older allocation first), each with its address, size, id,
// owner, name and stacks.
inline constexpr size_t kOomTopBlocks = 10;
void append_oom_top_rows(const DeviceTables& tables, const RowStamp& stamp, int32_t device,
                         std::vector<DumpRow>& rows);

}  // namespace memtap
