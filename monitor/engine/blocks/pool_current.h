// Which live tables make a device's pool (pool_state.h): host mappings around heap blocks,
// or HAL segments around PTA blocks (live and pending) once the device has PTA blocks.
#pragma once

#include "monitor/engine/blocks/analyzer_state.h"
#include "monitor/engine/blocks/pool_state.h"

namespace memtap::blocks {

inline PoolState current_pool(const DeviceState& d, bool with_blocks) {
  PoolState s;
  if (d.is_host()) {
    s = compute_pool_state(&d.layers[kMmapSlot].table, &d.layers[uint8_t(Layer::kHost)].table,
                           nullptr, d.keys, kUnknown, PoolSource::kHostMappings, with_blocks);
  } else if (d.pta_seen) {
    s = compute_pool_state(&d.layers[uint8_t(Layer::kHal)].table,
                           &d.layers[uint8_t(Layer::kPta)].table, &d.pending, d.keys, d.pool_total,
                           PoolSource::kDeviceSegments, with_blocks);
  }
  s.pid = d.pid;
  s.device = d.device;
  return s;
}

// What an evaluation of the pool has to sort.
inline uint64_t pool_live_blocks(const DeviceState& d) {
  if (d.is_host())
    return d.layers[kMmapSlot].table.size() + d.layers[uint8_t(Layer::kHost)].table.size();
  return d.layers[uint8_t(Layer::kHal)].table.size() + d.layers[uint8_t(Layer::kPta)].table.size() +
         d.pending.size();
}

}  // namespace memtap::blocks
