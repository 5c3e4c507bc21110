// FREE-to-MALLOC pairing of device and pinned blocks, and an OOM's largest blocks (see
// device_pairing.h).
#include "monitor/engine/device_pairing.h"

#include <algorithm>

namespace memtap {
namespace {

DumpEventType event_type(DeviceLayer layer) {
  return layer == DeviceLayer::kHal ? DumpEventType::kHal : DumpEventType::kHostPinned;
}

std::unordered_map<uint64_t, DeviceBlock>& table(DeviceTables& tables, DeviceLayer layer) {
  return layer == DeviceLayer::kHal ? tables.hal : tables.pinned;
}

// A FREE (or OOM_TOP_ALLOC) row of `block`; MALLOC rows add the name and stacks.
DumpRow block_row(DumpEvent event, DumpEventType type, const RowStamp& stamp, uint64_t addr,
                  const DeviceBlock& block) {
  DumpRow row;
  row.event = event;
  row.event_type = type;
  row.device = block.device;
  row.timestamp_ns = stamp.timestamp_ns;
  row.process_id = stamp.process_id;
  row.thread_id = stamp.thread_id;
  row.ptr = addr;
  row.size_bytes = block.size_bytes;
  row.allocation_id = block.allocation_id;
  row.owner = block.owner;
  return row;
}

void set_stream(const DeviceCall& call, DumpRow& row) {
  row.has_stream = call.has_stream;
  row.stream = call.has_stream ? call.stream : 0;
}

}  // namespace

void pair_device_malloc(DeviceTables& tables, DeviceLayer layer, const RowStamp& stamp,
                        const DeviceCall& call, const AllocContext& context, PairingOutput& out) {
  auto& live = table(tables, layer);
  const DumpEventType type = event_type(layer);
  DeviceBlock block;
  block.size_bytes = call.size_bytes;
  block.allocation_id = ++out.last_allocation_id;
  block.owner = context.owner;
  block.name = context.name;
  block.stack_python = context.stack_python;
  block.stack_c = context.stack_c;
  block.device = layer == DeviceLayer::kHal ? call.device : kDumpNoDevice;
  auto [it, added] = live.try_emplace(call.addr, block);
  if (!added) {
    // The FREE of the block there was lost (dropped events): close it here, as the heap does.
    out.rows.push_back(block_row(DumpEvent::kFree, type, stamp, call.addr, it->second));
    ++out.lost_frees;
    it->second = block;
  }
  DumpRow row = block_row(DumpEvent::kMalloc, type, stamp, call.addr, block);
  row.name = block.name;
  row.stack_python = block.stack_python;
  row.stack_c = block.stack_c;
  set_stream(call, row);
  out.rows.push_back(row);
}

void pair_device_free(DeviceTables& tables, DeviceLayer layer, const RowStamp& stamp,
                      const DeviceCall& call, PairingOutput& out) {
  auto& live = table(tables, layer);
  DeviceBlock block;
  if (auto it = live.find(call.addr); it != live.end()) {
    block = it->second;
    live.erase(it);
  } else {
    ++out.unmatched_frees;
    block.device = layer == DeviceLayer::kHal ? call.device : kDumpNoDevice;
  }
  DumpRow row = block_row(DumpEvent::kFree, event_type(layer), stamp, call.addr, block);
  set_stream(call, row);
  out.rows.push_back(row);
}

void append_oom_top_rows(const DeviceTables& tables, const RowStamp& stamp, int32_t device,
                         std::vector<DumpRow>& rows) {
  struct Entry {
    uint64_t addr;
    const DeviceBlock* block;
  };
  std::vector<Entry> on_device;
  for (const auto& [addr, block] : tables.hal) {
    if (block.device == device) on_device.push_back({addr, &block});
  }
  const size_t top = std::min(on_device.size(), kOomTopBlocks);
  std::partial_sort(on_device.begin(), on_device.begin() + top, on_device.end(),
                    [](const Entry& a, const Entry& b) {
                      if (a.block->size_bytes != b.block->size_bytes)
                        return a.block->size_bytes > b.block->size_bytes;
                      return a.block->allocation_id < b.block->allocation_id;
                    });
  for (size_t i = 0; i < top; ++i) {
    const DeviceBlock& block = *on_device[i].block;
    DumpRow row = block_row(DumpEvent::kOomDetail, DumpEventType::kOomTopAlloc, stamp,
                            on_device[i].addr, block);
    row.name = block.name;
    row.stack_python = block.stack_python;
    row.stack_c = block.stack_c;
    rows.push_back(row);
  }
}

}  // namespace memtap
