// FREE-to-MALLOC pairing of device and pinned blocks, and an OOM's largest blocks (see
// device_pairing.h).
#include "monitor/engine/device_pairing.h"

#include <algorithm>
#include <limits>

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

// A block the call just obtained, with what the thread's context says of it.
DeviceBlock new_block(const DeviceCall& call, const AllocContext& context, int32_t device,
                      PairingOutput& out) {
  DeviceBlock block;
  block.size_bytes = call.size_bytes;
  block.allocation_id = ++out.last_allocation_id;
  block.owner = context.owner;
  block.name = context.name;
  block.stack_python = context.stack_python;
  block.stack_c = context.stack_c;
  block.device = device;
  return block;
}

// A row that describes the block whole (MALLOC, OOM_TOP_ALLOC): its name and stacks too.
DumpRow described_row(DumpEvent event, DumpEventType type, const RowStamp& stamp, uint64_t addr,
                      const DeviceBlock& block) {
  DumpRow row = block_row(event, type, stamp, addr, block);
  row.name = block.name;
  row.stack_python = block.stack_python;
  row.stack_c = block.stack_c;
  return row;
}

void set_stream(const DeviceCall& call, DumpRow& row) {
  row.has_stream = call.has_stream;
  row.stream = call.has_stream ? call.stream : 0;
}

// Attr used and total of a PTA row: its device's pool after the event.
void set_pool(const DeviceTables& tables, DumpRow& row) {
  const auto it = tables.pools.find(row.device);
  if (it == tables.pools.end()) {
    row.pool_used = 0;
    row.pool_total = -1;
    return;
  }
  constexpr auto kMax = uint64_t(std::numeric_limits<int64_t>::max());
  row.pool_used = int64_t(std::min<unsigned __int128>(it->second.live_bytes, kMax));
  row.pool_total = it->second.reserved_bytes;
}

// The pool took `block` back: its FREE_COMPLETED row.
DumpRow completed_row(const RowStamp& stamp, uint64_t addr, const DeviceBlock& block) {
  // Ptr and size only (Attr {"size"}): the block's id and owner were on its FREE.
  DumpRow row = block_row(DumpEvent::kFreeCompleted, DumpEventType::kPta, stamp, addr, block);
  row.allocation_id = 0;
  row.owner = 0;
  return row;
}

// The FREE row of the PTA block at `addr`, which has left `tables.pta` (its device's live
// bytes already lowered).
DumpRow pool_free_row(const DeviceTables& tables, const RowStamp& stamp, uint64_t addr,
                      const DeviceBlock& block) {
  DumpRow row = block_row(DumpEvent::kFree, DumpEventType::kPta, stamp, addr, block);
  set_pool(tables, row);
  return row;
}

// The OOM_TOP_ALLOC rows of `table`'s largest blocks on `device`; false when it has none.
bool append_top_rows(const std::unordered_map<uint64_t, DeviceBlock>& table, const RowStamp& stamp,
                     int32_t device, std::vector<DumpRow>& rows) {
  struct Entry {
    uint64_t addr;
    const DeviceBlock* block;
  };
  std::vector<Entry> on_device;
  for (const auto& [addr, block] : table) {
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
    rows.push_back(described_row(DumpEvent::kOomDetail, DumpEventType::kOomTopAlloc, stamp,
                                 on_device[i].addr, block));
  }
  return top != 0;
}

}  // namespace

void pair_device_malloc(DeviceTables& tables, DeviceLayer layer, const RowStamp& stamp,
                        const DeviceCall& call, const AllocContext& context, PairingOutput& out) {
  auto& live = table(tables, layer);
  const DumpEventType type = event_type(layer);
  const DeviceBlock block =
      new_block(call, context, layer == DeviceLayer::kHal ? call.device : kDumpNoDevice, out);
  auto [it, added] = live.try_emplace(call.addr, block);
  if (!added) {
    // The FREE of the block there was lost (dropped events): close it here, as the heap does.
    out.rows.push_back(block_row(DumpEvent::kFree, type, stamp, call.addr, it->second));
    ++out.lost_frees;
    it->second = block;
  }
  DumpRow row = described_row(DumpEvent::kMalloc, type, stamp, call.addr, block);
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

void pair_pool_malloc(DeviceTables& tables, const RowStamp& stamp, const DeviceCall& call,
                      const AllocContext& context, PairingOutput& out) {
  if (auto it = tables.pta_pending.find(call.addr); it != tables.pta_pending.end()) {
    // The pool hands out only blocks it took back: that completion was lost.
    out.rows.push_back(completed_row(stamp, call.addr, it->second));
    ++out.lost_frees;
    tables.pta_pending.erase(it);
  }
  const DeviceBlock block = new_block(call, context, call.device, out);
  auto [it, added] = tables.pta.try_emplace(call.addr, block);
  if (!added) {
    // The FREE of the block there was lost (dropped events): close it here, as HAL does.
    const DeviceBlock lost = it->second;
    tables.pools[lost.device].live_bytes -= lost.size_bytes;
    out.rows.push_back(pool_free_row(tables, stamp, call.addr, lost));
    ++out.lost_frees;
    it->second = block;
  }
  tables.pools[block.device].live_bytes += block.size_bytes;
  DumpRow row = described_row(DumpEvent::kMalloc, DumpEventType::kPta, stamp, call.addr, block);
  set_stream(call, row);
  set_pool(tables, row);
  out.rows.push_back(row);
}

void pair_pool_free(DeviceTables& tables, const RowStamp& stamp, const DeviceCall& call,
                    bool completed, PairingOutput& out) {
  DeviceBlock block;
  if (auto it = tables.pta.find(call.addr); it != tables.pta.end()) {
    block = it->second;
    tables.pta.erase(it);
    tables.pools[block.device].live_bytes -= block.size_bytes;
  } else {
    ++out.unmatched_frees;
    block.device = call.device;
  }
  DumpRow row = pool_free_row(tables, stamp, call.addr, block);
  set_stream(call, row);
  row.free_pending = !completed;
  out.rows.push_back(row);
  // Pending even when it matched nothing: the FREE_COMPLETED that its row promises comes.
  if (!completed) tables.pta_pending.insert_or_assign(call.addr, block);
}

void complete_pool_free(DeviceTables& tables, const RowStamp& stamp, const DeviceCall& call,
                        PairingOutput& out) {
  auto it = tables.pta_pending.find(call.addr);
  if (it == tables.pta_pending.end()) {
    ++out.unmatched_frees;
    return;
  }
  out.rows.push_back(completed_row(stamp, call.addr, it->second));
  tables.pta_pending.erase(it);
}

void pool_state_row(DeviceTables& tables, const RowStamp& stamp, int32_t device,
                    int64_t allocated_bytes, int64_t reserved_bytes, std::vector<DumpRow>& rows) {
  PoolFigures& pool = tables.pools[device];
  pool.reserved_bytes = reserved_bytes;
  DumpRow row;
  if (pool.held_max_allocated >= 0) {
    row.has_pool_peaks = true;
    row.size_bytes = uint64_t(pool.held_max_allocated);
    row.total_bytes = uint64_t(pool.held_max_reserved);
    pool.held_max_allocated = pool.held_max_reserved = -1;
  }
  row.event = DumpEvent::kSnapshot;
  row.event_type = DumpEventType::kPta;
  row.device = device;
  row.timestamp_ns = stamp.timestamp_ns;
  row.process_id = stamp.process_id;
  row.thread_id = stamp.thread_id;
  row.pool_used = allocated_bytes;
  row.pool_total = reserved_bytes;
  rows.push_back(row);
}

void hold_pool_peaks(DeviceTables& tables, int32_t device, int64_t max_allocated_bytes,
                     int64_t max_reserved_bytes) {
  PoolFigures& pool = tables.pools[device];
  pool.held_max_allocated = max_allocated_bytes;
  pool.held_max_reserved = max_reserved_bytes;
}

void append_oom_top_rows(const DeviceTables& tables, const RowStamp& stamp, int32_t device,
                         std::vector<DumpRow>& rows) {
  // The tensors say more than the pool's segments that hold them: those when there are any.
  if (!append_top_rows(tables.pta, stamp, device, rows)) {
    append_top_rows(tables.hal, stamp, device, rows);
  }
}

}  // namespace memtap
