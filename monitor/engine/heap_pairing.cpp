// FREE-to-MALLOC pairing over a process's live tables (see heap_pairing.h).
#include "monitor/engine/heap_pairing.h"

#include <iterator>
#include <limits>
#include <utility>

namespace memtap {
namespace {

// Every field given at once: a DumpRow zeroed by its defaults and then filled costs a
// `rep stos` with GCC 12, which was a sixth of pairing's time under a flood.
DumpRow make_row(DumpEvent event, bool is_mmap, const RowStamp& stamp, uint64_t addr,
                 const LiveBlock& block) {
  return DumpRow{event,
                 DumpEventType::kHost,
                 is_mmap,
                 /*has_stream=*/false,
                 kDumpNoDevice,
                 stamp.timestamp_ns,
                 stamp.process_id,
                 stamp.thread_id,
                 addr,
                 block.size_bytes,
                 /*total_bytes=*/0,
                 block.allocation_id,
                 event == DumpEvent::kFree ? block.inherited_from_pid : 0,
                 /*name=*/0,
                 block.owner,
                 /*stack_python=*/0,
                 /*stack_c=*/0,
                 /*free_pending=*/false,
                 /*has_pool_peaks=*/false,
                 /*step=*/0,
                 /*end_ns=*/0,
                 /*stream=*/0};
}

DumpRow make_malloc_row(bool is_mmap, const RowStamp& stamp, uint64_t addr, const LiveBlock& block,
                        const AllocContext& context) {
  DumpRow row = make_row(DumpEvent::kMalloc, is_mmap, stamp, addr, block);
  row.name = context.name;
  row.stack_python = context.stack_python;
  row.stack_c = context.stack_c;
  return row;
}

LiveBlock new_block(uint64_t size_bytes, uint32_t owner, PairingOutput& out) {
  return LiveBlock{size_bytes, ++out.last_allocation_id, 0, owner};
}

// One past the last byte, clamped: an untrusted addr+size may not wrap around to 0.
uint64_t range_end(uint64_t addr, uint64_t size_bytes) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  return size_bytes > max - addr ? max : addr + size_bytes;
}

// Releases the live mappings that overlap [start, end) or start inside it (a zero-length
// mapping overlaps nothing); returns how many there were.
size_t release_mappings(LiveTables& tables, const RowStamp& stamp, uint64_t start, uint64_t end,
                        PairingOutput& out) {
  if (start >= end) return 0;
  auto& mmaps = tables.mmaps;
  // Mappings never overlap each other, so only the last one starting before `start` can
  // reach into the range from the left; every one starting inside it is released.
  auto it = mmaps.lower_bound(start);
  if (it != mmaps.begin()) {
    auto before = std::prev(it);
    if (range_end(before->first, before->second.size_bytes) > start) it = before;
  }
  size_t released = 0;
  while (it != mmaps.end() && it->first < end) {
    const uint64_t map_start = it->first;
    const LiveBlock block = it->second;
    const uint64_t map_end = range_end(map_start, block.size_bytes);
    it = mmaps.erase(it);
    ++released;
    out.rows.push_back(make_row(DumpEvent::kFree, true, stamp, map_start, block));
    // What the range did not cover stays mapped: it is a new block from here on, so it
    // gets a MALLOC row that later FREE rows can pair with.
    if (map_start < start) {
      const LiveBlock left = new_block(start - map_start, block.owner, out);
      mmaps.emplace(map_start, left);
      out.rows.push_back(make_row(DumpEvent::kMalloc, true, stamp, map_start, left));
    }
    if (map_end > end) {
      const LiveBlock right = new_block(map_end - end, block.owner, out);
      it = mmaps.emplace(end, right).first;
      ++it;
      out.rows.push_back(make_row(DumpEvent::kMalloc, true, stamp, end, right));
    }
  }
  return released;
}

// The base's block at `addr`, if still live here, as this process sees it.
bool find_base_block(const LiveTables& tables, uint64_t addr, LiveBlock* block) {
  if (!tables.base) return false;
  const LiveBlock* b = tables.base->find(addr);
  if (b == nullptr || tables.gone.find(addr) != nullptr) return false;
  *block = *b;
  if (tables.base_inherited_from_pid != 0)
    block->inherited_from_pid = tables.base_inherited_from_pid;
  return true;
}

// The same, and the block is no longer live here.
bool take_base_block(LiveTables& tables, uint64_t addr, LiveBlock* block) {
  if (!find_base_block(tables, addr, block)) return false;
  tables.gone.put(addr, 1);
  return true;
}

// Puts every entry of `from` into `into`, sized first (see FlatMap::for_each); an entry
// `into` already has stays when `keep_existing`.
void merge_into(FlatMap<LiveBlock>& into, const FlatMap<LiveBlock>& from, bool keep_existing) {
  into.reserve(into.size() + from.size());
  from.for_each([&](uint64_t addr, const LiveBlock& block) {
    if (!keep_existing || into.find(addr) == nullptr) into.put(addr, block);
  });
}

// Back to `heap` alone. Where the base is this process's alone it is folded in where it
// lies (what changed since the fork, plus one pass over its slots if it was inherited);
// where others still share it, the live part of it is copied.
void flatten(LiveTables& tables) {
  if (!tables.base) return;
  FlatMap<LiveBlock> flat;
  const uint32_t inherited = tables.base_inherited_from_pid;
  if (tables.base.use_count() == 1) {
    flat = std::move(*tables.base);
    tables.gone.for_each([&](uint64_t addr, uint8_t) {
      LiveBlock freed;
      flat.take(addr, &freed);
    });
    if (inherited != 0)
      flat.for_each_value([&](LiveBlock& b) { b.inherited_from_pid = inherited; });
  } else {
    flat.reserve(live_heap_blocks(tables));
    tables.base->for_each([&](uint64_t addr, LiveBlock block) {
      if (tables.gone.find(addr) != nullptr) return;
      if (inherited != 0) block.inherited_from_pid = inherited;
      flat.put(addr, block);
    });
  }
  // The larger table takes the smaller one's entries (FlatMap::for_each); they share no key.
  if (tables.heap.memory_bytes() > flat.memory_bytes()) {
    merge_into(tables.heap, flat, false);
  } else {
    merge_into(flat, tables.heap, false);
    tables.heap = std::move(flat);
  }
  tables.base.reset();
  tables.gone = FlatMap<uint8_t>{};
  tables.base_inherited_from_pid = 0;
}

// After a change: folds the base in once it is this process's alone (its children have
// ended, or its parent has let go of it), or once this process's own changes have outgrown
// it, so that each event's extra lookup in the base does not last for ever, and the fold's
// cost is paid by at least as many events.
void settle(LiveTables& tables) {
  if (tables.base.use_count() == 1 ||
      tables.heap.size() + tables.gone.size() > tables.base->size()) {
    flatten(tables);
  }
}

}  // namespace

void pair_malloc(LiveTables& tables, const RowStamp& stamp, uint64_t addr, uint64_t size_bytes,
                 const AllocContext& context, PairingOutput& out) {
  const LiveBlock block = new_block(size_bytes, context.owner, out);
  LiveBlock inherited;
  if (const LiveBlock* old = tables.heap.find(addr)) {
    // The agent lost this address's FREE (dropped events): close the old block here so
    // that its lifetime ends and the new block's FREE does not pair with it.
    out.rows.push_back(make_row(DumpEvent::kFree, false, stamp, addr, *old));
    ++out.lost_frees;
  } else if (take_base_block(tables, addr, &inherited)) {
    out.rows.push_back(make_row(DumpEvent::kFree, false, stamp, addr, inherited));
    ++out.lost_frees;
  }
  tables.heap.put(addr, block);
  out.rows.push_back(make_malloc_row(false, stamp, addr, block, context));
  if (tables.base) settle(tables);
}

void pair_free(LiveTables& tables, const RowStamp& stamp, uint64_t addr, PairingOutput& out) {
  LiveBlock block;
  if (!tables.heap.take(addr, &block) && !take_base_block(tables, addr, &block)) {
    ++out.unmatched_frees;
    out.rows.push_back(make_row(DumpEvent::kFree, false, stamp, addr, LiveBlock{}));
    return;
  }
  out.rows.push_back(make_row(DumpEvent::kFree, false, stamp, addr, block));
  if (tables.base) settle(tables);
}

void pair_mmap(LiveTables& tables, const RowStamp& stamp, uint64_t addr, uint64_t size_bytes,
               const AllocContext& context, PairingOutput& out) {
  out.lost_frees += release_mappings(tables, stamp, addr, range_end(addr, size_bytes), out);
  // A zero-length mapping overlaps nothing, yet may sit at the same start as this one.
  if (auto same = tables.mmaps.find(addr); same != tables.mmaps.end()) {
    out.rows.push_back(make_row(DumpEvent::kFree, true, stamp, addr, same->second));
    ++out.lost_frees;
    tables.mmaps.erase(same);
  }
  const LiveBlock block = new_block(size_bytes, context.owner, out);
  tables.mmaps.emplace(addr, block);
  out.rows.push_back(make_malloc_row(true, stamp, addr, block, context));
}

void pair_munmap(LiveTables& tables, const RowStamp& stamp, uint64_t addr, uint64_t size_bytes,
                 PairingOutput& out) {
  // The agent reports every munmap, since it cannot tell an anonymous range from a file
  // mapping or its own buffers; a range that holds no mapping we saw is not ours to record.
  release_mappings(tables, stamp, addr, range_end(addr, size_bytes), out);
}

bool find_heap_block(const LiveTables& tables, uint64_t addr, LiveBlock* block) {
  if (const LiveBlock* own = tables.heap.find(addr)) {
    *block = *own;
    return true;
  }
  return find_base_block(tables, addr, block);
}

size_t live_heap_blocks(const LiveTables& tables) {
  return tables.heap.size() + (tables.base ? tables.base->size() - tables.gone.size() : 0);
}

size_t live_blocks(const LiveTables& tables) {
  return live_heap_blocks(tables) + tables.mmaps.size();
}

void prefetch_heap(const LiveTables& tables, uint64_t addr) {
  tables.heap.prefetch(addr);
  if (tables.base) tables.base->prefetch(addr);
}

LiveTables snapshot_for_child(LiveTables& parent, uint32_t parent_pid) {
  // A parent that changed much since its last fork folds first, so that what the child
  // copies stays small: forks come in bursts (a DataLoader's workers), each of them cheap.
  if (parent.base && (parent.heap.size() + parent.gone.size()) * 8 > parent.base->size()) {
    flatten(parent);
  }
  if (!parent.base) {
    parent.base = std::make_shared<FlatMap<LiveBlock>>(std::move(parent.heap));
    parent.heap = FlatMap<LiveBlock>{};
  }
  LiveTables child;
  child.base = parent.base;
  child.base_inherited_from_pid = parent_pid;
  child.gone = parent.gone;
  // Sized first (see FlatMap::for_each).
  child.heap.reserve(parent.heap.size());
  parent.heap.for_each([&](uint64_t addr, LiveBlock block) {
    block.inherited_from_pid = parent_pid;
    child.heap.put(addr, block);
  });
  child.mmaps = parent.mmaps;
  for (auto& entry : child.mmaps) entry.second.inherited_from_pid = parent_pid;
  return child;
}

void seed_from_parent(LiveTables& child, LiveTables snapshot) {
  for (auto& entry : child.mmaps) snapshot.mmaps.insert_or_assign(entry.first, entry.second);
  child.mmaps = std::move(snapshot.mmaps);
  // The child's own blocks must all be in `heap`, since the snapshot's base replaces its
  // own. A process is seeded once, at its fork, so they are, and this does nothing; it
  // keeps the merge right should that ever change.
  flatten(child);
  // The child's own blocks hide the parent's at their addresses.
  child.heap.for_each([&](uint64_t addr, const LiveBlock&) {
    LiveBlock hidden;
    take_base_block(snapshot, addr, &hidden);
  });
  // Always the smaller table into the larger one (see FlatMap::for_each).
  if (child.heap.memory_bytes() >= snapshot.heap.memory_bytes()) {
    merge_into(child.heap, snapshot.heap, true);
  } else {
    merge_into(snapshot.heap, child.heap, false);
    child.heap = std::move(snapshot.heap);
  }
  child.base = std::move(snapshot.base);
  child.gone = std::move(snapshot.gone);
  child.base_inherited_from_pid = snapshot.base_inherited_from_pid;
}

}  // namespace memtap
