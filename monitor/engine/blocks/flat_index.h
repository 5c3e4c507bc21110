// The block analyses' index: uint64 keys (addresses, pids, string ids) to uint32 positions
// in their slabs and lists, with kNone for "absent" so that a lookup reads as one compare.
// The probing is monitor/engine/flat_map.h's, shared with the timeline.
#pragma once

#include <cstddef>
#include <cstdint>

#include "monitor/engine/flat_map.h"

namespace memtap::blocks {

class FlatIndex {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;  // "absent"; never stored as a value

  size_t size() const { return map_.size(); }
  size_t memory_bytes() const { return map_.memory_bytes(); }

  uint32_t find(uint64_t key) const {
    const uint32_t* value = map_.find(key);
    return value ? *value : kNone;
  }
  // Sets key -> value, replacing any previous value.
  void insert(uint64_t key, uint32_t value) { map_.put(key, value); }
  // Removes key; returns its value, or kNone when it was absent.
  uint32_t erase(uint64_t key) {
    uint32_t value = kNone;
    map_.take(key, &value);
    return value;
  }
  template <class F>
  void for_each(F&& f) const {
    map_.for_each(f);
  }

 private:
  FlatMap<uint32_t> map_;
};

}  // namespace memtap::blocks
