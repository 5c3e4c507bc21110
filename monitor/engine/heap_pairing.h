// Live blocks of one process, and the rules that pair each FREE with its MALLOC.
//
// The heap (malloc family) and anonymous mappings are separate tables: a heap block and a
// mapping never pair with each other, and mappings are released by range (munmap may cover
// several of them, or part of one) while heap blocks are released by exact address.
// Every function appends the rows it produces, in the order they happen, to `out.rows`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "monitor/engine/flat_map.h"
#include "monitor/model/dump_row.h"

namespace memtap {

struct LiveBlock {
  uint64_t size_bytes = 0;
  uint64_t allocation_id = 0;
  uint32_t inherited_from_pid = 0;  // non-zero: copied from that parent at fork()
  uint32_t owner = 0;               // session string id of its owner label: its FREE says it too
};

// What the allocating thread was doing (session string ids, 0: nothing): written on the
// MALLOC row; the owner also on the block's FREE row.
struct AllocContext {
  uint32_t owner = 0;
  uint32_t name = 0;  // the innermost open operator
  uint32_t stack_python = 0;
  uint32_t stack_c = 0;
};

// The heap's live blocks as one process sees them. Until its first fork that is `heap`
// alone. A fork freezes them into `base`, shared by the parent and its children (a
// DataLoader's workers each had a copy: 0.2 s of the monitor's time and 67 MB per child of
// a parent with a million live blocks), and each side keeps its own changes since: its new
// blocks in `heap`, the base blocks it freed in `gone`. So a key live in the base (not in
// `gone`) is never in `heap`. Pairing folds the three back into `heap` once the base is
// this process's alone, or once its own changes outgrow it.
struct LiveTables {
  // By start address. Every MALLOC and FREE looks it up on the session's thread, so it is
  // the open-addressing map: std::unordered_map's node per block made pairing the costliest
  // step of receiving (issue 5's pipeline figure).
  FlatMap<LiveBlock> heap;
  // Frozen while shared: only a holder alone (use_count 1) changes it, as it folds it in.
  std::shared_ptr<FlatMap<LiveBlock>> base;
  FlatMap<uint8_t> gone;                 // base addresses freed (or reused) here since
  uint32_t base_inherited_from_pid = 0;  // non-zero: this process inherited the base from it
  std::map<uint64_t, LiveBlock> mmaps;   // by start address; ordered for range lookups
};

// The heap block live at `addr` as `tables` see it, through `block`; false if none.
bool find_heap_block(const LiveTables& tables, uint64_t addr, LiveBlock* block);

// How many heap blocks are live.
size_t live_heap_blocks(const LiveTables& tables);

// How many blocks are live: heap blocks and mappings.
size_t live_blocks(const LiveTables& tables);

// Asks the CPU for the slots a lookup of `addr` will read (FlatMap::prefetch).
void prefetch_heap(const LiveTables& tables, uint64_t addr);

// Who and when, for every row one event produces.
struct RowStamp {
  int64_t timestamp_ns = 0;  // epoch
  uint32_t process_id = 0;
  uint32_t thread_id = 0;
};

// Where pairing writes: the rows, the session-wide id counter, the process's counters.
struct PairingOutput {
  std::vector<DumpRow>& rows;
  uint64_t& last_allocation_id;  // ids are last_allocation_id + 1, ...: unique per session
  uint64_t& unmatched_frees;     // FREE of an address with no live heap block
  uint64_t& lost_frees;          // MALLOC/mmap over a live block: its FREE was lost
};

// A MALLOC; a block still live at `addr` is first closed by a synthetic FREE.
void pair_malloc(LiveTables& tables, const RowStamp& stamp, uint64_t addr, uint64_t size_bytes,
                 const AllocContext& context, PairingOutput& out);

// A FREE carrying the live block's size and id; size 0 and id 0 when no block is live there.
void pair_free(LiveTables& tables, const RowStamp& stamp, uint64_t addr, PairingOutput& out);

// An anonymous mapping. Live mappings it overlaps were unmapped without us seeing it (or
// replaced by MAP_FIXED): they are released as by pair_munmap and counted in lost_frees.
void pair_mmap(LiveTables& tables, const RowStamp& stamp, uint64_t addr, uint64_t size_bytes,
               const AllocContext& context, PairingOutput& out);

// Releases every live mapping overlapping [addr, addr+size_bytes), in address order: a FREE
// of the whole mapping, then a MALLOC (new id, same time) for each part left outside the
// range (with the mapping's owner). A range with no live mapping (a file mapping, say)
// gives no row at all.
void pair_munmap(LiveTables& tables, const RowStamp& stamp, uint64_t addr, uint64_t size_bytes,
                 PairingOutput& out);

// What a fork() child starts with: the parent's live blocks, marked as inherited from it.
// The parent's blocks become (or already are) a base the two share, so this costs what the
// parent changed since its last fork, not what it holds.
LiveTables snapshot_for_child(LiveTables& parent, uint32_t parent_pid);

// Adds a fork() snapshot to a child's tables. Blocks the child already has win: they were
// recorded from the child's own events.
void seed_from_parent(LiveTables& child, LiveTables snapshot);

}  // namespace memtap
