// A hash map from uint64 keys to uint32 values for the per-event paths (live blocks by
// address, dense key dictionaries, processes and devices). std::unordered_map allocates a
// node per insert, which alone would cost most of the 200 ns an event may take at 5
// million events per second; this table is one flat array with linear probing.
//
// Erase shifts the following entries back instead of leaving tombstones, so a table that
// sees billions of insert/erase pairs (every malloc and free) never degrades.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memtap::blocks {

class FlatIndex {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;  // "absent"; never stored as a value

  FlatIndex() { rehash(16); }

  size_t size() const { return size_; }
  size_t memory_bytes() const { return entries_.capacity() * sizeof(Entry); }

  uint32_t find(uint64_t key) const {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.value == kNone) return kNone;
      if (e.key == key) return e.value;
    }
  }

  // Sets key -> value, replacing any previous value.
  void insert(uint64_t key, uint32_t value) {
    if ((size_ + 1) * 2 > entries_.size()) rehash(entries_.size() * 2);
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Entry& e = entries_[i];
      if (e.value == kNone) {
        e = {key, value};
        ++size_;
        return;
      }
      if (e.key == key) {
        e.value = value;
        return;
      }
    }
  }

  // Removes key; returns its value, or kNone when it was absent.
  uint32_t erase(uint64_t key) {
    size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (entries_[i].value == kNone) return kNone;
      if (entries_[i].key == key) break;
    }
    const uint32_t value = entries_[i].value;
    // Backward shift: pull later entries of the same probe run into the hole unless their
    // home slot lies cyclically in (hole, j], where moving them would make them unreachable.
    for (size_t j = (i + 1) & mask_; entries_[j].value != kNone; j = (j + 1) & mask_) {
      const size_t k = home(entries_[j].key);
      const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (stays) continue;
      entries_[i] = entries_[j];
      i = j;
    }
    entries_[i].value = kNone;
    --size_;
    return value;
  }

  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : entries_)
      if (e.value != kNone) f(e.key, e.value);
  }

 private:
  struct Entry {
    uint64_t key = 0;
    uint32_t value = kNone;
  };

  // Fibonacci hashing: block addresses share their low bits (alignment), the product's
  // high bits do not.
  size_t home(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }

  void rehash(size_t capacity) {
    std::vector<Entry> old;
    old.swap(entries_);
    entries_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (const Entry& e : old)
      if (e.value != kNone) insert(e.key, e.value);
  }

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  unsigned shift_ = 64;
  size_t size_ = 0;
};

}  // namespace memtap::blocks
