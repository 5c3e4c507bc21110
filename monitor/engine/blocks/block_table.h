// The live blocks of one (process, device, layer): what a MALLOC recorded, found again by
// address at the FREE, at ACCESS events and when the pool state is drawn.
//
// Blocks sit in a slab (a vector with a free list) and a FlatIndex maps address -> slot,
// so a malloc/free pair allocates nothing once the table has grown. A slot's generation
// changes when it is freed, so a handle kept elsewhere (an operator's list of the blocks
// it allocated) can tell that its block is gone.
#pragma once

#include <cstdint>
#include <vector>

#include "monitor/engine/blocks/flat_index.h"

namespace memtap::blocks {

constexpr int64_t kNoTime = INT64_MIN;  // a time that did not happen (yet)
constexpr uint8_t kNoAccount = 0xFF;    // a block no account counts (host mmap, pinned)

struct LiveBlock {
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  int64_t alloc_ts_ns = 0;
  uint64_t allocation_id = 0;
  uint64_t alloc_seq = 0;  // the analyzer's event number at MALLOC: "allocated inside a scope"
  uint32_t tid = 0;
  uint32_t owner = 0;  // StringTable ids
  uint32_t name = 0;
  uint32_t owner_key = 0;  // dense keys in the device's KeyIndex
  uint32_t stack_key = 0;
  uint32_t name_key = 0;
  uint32_t generation = 0;
  uint32_t uses = 0;  // ACCESS events seen on the block
  int64_t first_use_ns = kNoTime;
  int64_t last_use_ns = kNoTime;
  int64_t max_idle_ns = 0;  // longest time between two consecutive uses
  int64_t max_idle_start_ns = kNoTime;
  int64_t op_last_use_ns = kNoTime;  // end of the outermost operator that allocated it
  uint8_t account = kNoAccount;
  bool in_op = false;     // allocated while an operator was open on its thread
  bool in_range = false;  // allocated while an MSTX range was open in its process
};

class BlockTable {
 public:
  size_t size() const { return index_.size(); }
  size_t memory_bytes() const {
    return index_.memory_bytes() + slots_.capacity() * sizeof(LiveBlock) +
           free_.capacity() * sizeof(uint32_t);
  }

  LiveBlock* find(uint64_t addr) {
    const uint32_t slot = index_.find(addr);
    return slot == FlatIndex::kNone ? nullptr : &slots_[slot];
  }

  // A fresh block at addr (the caller removed any block live there first); returns its slot.
  uint32_t insert(uint64_t addr) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = uint32_t(slots_.size());
      slots_.emplace_back();
    }
    const uint32_t generation = slots_[slot].generation;
    slots_[slot] = LiveBlock{};
    slots_[slot].generation = generation;
    slots_[slot].addr = addr;
    index_.insert(addr, slot);
    return slot;
  }

  // Moves the block at addr into *out and frees its slot; false when none is live there.
  bool erase(uint64_t addr, LiveBlock* out) {
    const uint32_t slot = index_.erase(addr);
    if (slot == FlatIndex::kNone) return false;
    *out = slots_[slot];
    ++slots_[slot].generation;
    free_.push_back(slot);
    return true;
  }

  LiveBlock& at(uint32_t slot) { return slots_[slot]; }
  const LiveBlock& at(uint32_t slot) const { return slots_[slot]; }

  template <class F>
  void for_each(F&& f) const {
    index_.for_each([&](uint64_t, uint32_t slot) { f(slots_[slot]); });
  }

 private:
  FlatIndex index_;
  std::vector<LiveBlock> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace memtap::blocks
