// The live blocks of one (process, device, layer): what a MALLOC recorded, found again by
// address at the FREE, at ACCESS events and when the pool state is drawn.
//
// Blocks sit in a slab (chunks with a free list) and a FlatIndex maps address -> slot, so a
// malloc/free pair allocates nothing once the table has grown. The slab grows a chunk at a
// time: a doubling vector would hold up to twice the blocks' bytes while it copies, and
// leave its old buffers in malloc's heap.
//
// Issue 5 allows 100 B of monitor memory per live block, so a LiveBlock keeps only what
// every block needs (40 B); its address is the index's key. What only some blocks need -
// uses from ACCESS events, and the operator or range a block was allocated in - is a
// BlockUses in a side slab, made on first need and found through a second index by slot.
// A BlockUses's generation changes when it is freed, so a handle kept elsewhere (an
// operator's list of the blocks it allocated) can tell that its block is gone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "monitor/engine/flat_map.h"

namespace memtap::blocks {

constexpr int64_t kNoTime = INT64_MIN;  // a time that did not happen (yet)
constexpr uint8_t kNoAccount = 0xFF;    // a block no account counts (host mmap, pinned)

struct LiveBlock {
  uint64_t size_bytes = 0;
  int64_t alloc_ts_ns = 0;
  uint64_t allocation_id = 0;
  // Dense keys in the device's KeyIndex; the owner and name string ids are the keys'.
  uint32_t owner_key = 0;
  uint32_t stack_key = 0;
  uint32_t name_key = 0;
  uint8_t account = kNoAccount;
  bool has_uses = false;  // the table holds a BlockUses for it
  // A driver block that is a virtual-memory mapping (HAL, cuMemMap): contiguous ones are
  // the pages of one expandable segment, which the pool takes as one (pool_state.h).
  bool mapping = false;
};

// A PTA block whose FREE said free_pending (another stream still used it): out of the
// live table and of every account since its FREE (its lifetime, for Allocated, ended
// then), still in its segment until its FREE_COMPLETED.
struct PendingBlock {
  LiveBlock block;
  int64_t free_ns = kNoTime;  // its FREE (the request)
};

// Where and when a block was used: ACCESS events on it, and the operators and ranges open
// when it was allocated. Defaults: none of either.
struct BlockUses {
  uint64_t alloc_seq = 0;  // the analyzer's event number at MALLOC: "allocated inside a scope"
  uint32_t tid = 0;        // the MALLOC's thread (its operators)
  uint32_t uses = 0;       // ACCESS events seen on the block
  int64_t first_use_ns = kNoTime;
  int64_t last_use_ns = kNoTime;
  int64_t max_idle_ns = 0;  // longest time between two consecutive uses
  int64_t max_idle_start_ns = kNoTime;
  int64_t op_last_use_ns = kNoTime;  // end of the outermost operator that allocated it
  uint32_t generation = 0;           // of its place in the side slab
  bool in_op = false;                // allocated while an operator was open on its thread
  bool in_range = false;             // allocated while an MSTX range was open in its process
};

// A slab of T with a free list, grown a chunk at a time (never copied).
template <class T>
class Slab {
 public:
  size_t memory_bytes() const {
    return chunks_.size() * kChunk * sizeof(T) +
           (chunks_.capacity() * sizeof(chunks_[0]) + free_.capacity() * sizeof(uint32_t));
  }
  // A fresh T's position; what is there is the caller's to overwrite.
  uint32_t take() {
    if (!free_.empty()) {
      const uint32_t i = free_.back();
      free_.pop_back();
      return i;
    }
    if (end_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<T[]>(kChunk));
    return end_++;
  }
  void give_back(uint32_t i) { free_.push_back(i); }
  T& operator[](uint32_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const T& operator[](uint32_t i) const { return chunks_[i / kChunk][i % kChunk]; }

 private:
  static constexpr uint32_t kChunk = 1024;  // 40-64 KiB: below malloc's mmap threshold
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::vector<uint32_t> free_;
  uint32_t end_ = 0;  // positions ever handed out
};

class BlockTable {
 public:
  size_t size() const { return index_.size(); }
  size_t memory_bytes() const {
    return index_.memory_bytes() + blocks_.memory_bytes() + uses_index_.memory_bytes() +
           uses_.memory_bytes();
  }

  // The block's slot, or FlatIndex::kNone.
  uint32_t find(uint64_t addr) const { return index_.find(addr); }

  // For an event some events ahead (FlatMap::prefetch): its index slot, then, once that is
  // likely cached, the block's record, which a FREE reads.
  void prefetch_index(uint64_t addr) const { index_.prefetch(addr); }
  void prefetch_block(uint64_t addr) const {
    const uint32_t slot = index_.find(addr);
    if (slot != FlatIndex::kNone) __builtin_prefetch(&blocks_[slot]);
  }

  // A fresh block at addr (the caller removed any block live there first); returns its slot.
  uint32_t insert(uint64_t addr) {
    const uint32_t slot = blocks_.take();
    blocks_[slot] = LiveBlock{};
    index_.insert(addr, slot);
    return slot;
  }

  LiveBlock& at(uint32_t slot) { return blocks_[slot]; }
  const LiveBlock& at(uint32_t slot) const { return blocks_[slot]; }

  // The block's uses, made (all defaults but the generation) when it had none; the
  // position is the one uses_at() and a BlockRef take.
  uint32_t uses_of(uint32_t slot) {
    LiveBlock& b = blocks_[slot];
    if (b.has_uses) return uses_index_.find(slot);
    const uint32_t i = uses_.take();
    const uint32_t generation = uses_[i].generation;
    uses_[i] = BlockUses{};
    uses_[i].generation = generation;
    uses_index_.insert(slot, i);
    b.has_uses = true;
    return i;
  }
  BlockUses& uses_at(uint32_t i) { return uses_[i]; }
  // The block's uses, or the defaults' when it has none.
  const BlockUses& uses(const LiveBlock& b, uint32_t slot) const {
    static const BlockUses kNone;
    return b.has_uses ? uses_[uses_index_.find(slot)] : kNone;
  }

  // Moves the block at addr and its uses (defaults when none) into *out and *out_uses and
  // frees its slot; false when none is live there.
  bool erase(uint64_t addr, LiveBlock* out, BlockUses* out_uses) {
    const uint32_t slot = index_.erase(addr);
    if (slot == FlatIndex::kNone) return false;
    *out = blocks_[slot];
    *out_uses = BlockUses{};
    if (out->has_uses) {
      const uint32_t i = uses_index_.erase(slot);
      *out_uses = uses_[i];
      ++uses_[i].generation;
      uses_.give_back(i);
    }
    blocks_.give_back(slot);
    return true;
  }

  // Calls f(addr, block, uses) for every live block, in the index's order.
  template <class F>
  void for_each(F&& f) const {
    sweep([&](uint64_t addr, uint32_t slot) {
      const LiveBlock& b = blocks_[slot];
      f(addr, b, uses(b, slot));
    });
  }

  // Calls f(addr, block) for every live block, in the index's order, for sweeps that need no
  // uses (a pool's evaluation).
  template <class F>
  void for_each_block(F&& f) const {
    sweep([&](uint64_t addr, uint32_t slot) { f(addr, blocks_[slot]); });
  }

 private:
  // Calls f(addr, slot) for every live block, in the index's order. That order is random in
  // blocks_, so each block read was a cache miss the loop waited for: the pool's evaluation
  // of a 300K-block heap spent nearly all its time on that one load. Each block is
  // prefetched kAhead entries before f sees it.
  template <class F>
  void sweep(F&& f) const {
    constexpr size_t kAhead = 16;
    std::array<std::pair<uint64_t, uint32_t>, kAhead> ahead;
    size_t seen = 0;
    index_.for_each([&](uint64_t addr, uint32_t slot) {
      __builtin_prefetch(&blocks_[slot]);
      std::pair<uint64_t, uint32_t>& entry = ahead[seen % kAhead];
      if (seen >= kAhead) f(entry.first, entry.second);
      entry = {addr, slot};
      ++seen;
    });
    for (size_t i = seen > kAhead ? seen - kAhead : 0; i < seen; ++i) {
      f(ahead[i % kAhead].first, ahead[i % kAhead].second);
    }
  }

  FlatIndex index_;  // address -> slot in blocks_
  Slab<LiveBlock> blocks_;
  FlatIndex uses_index_;  // slot in blocks_ -> position in uses_
  Slab<BlockUses> uses_;
};

}  // namespace memtap::blocks
