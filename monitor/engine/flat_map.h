// A small open-addressing hash map from uint64_t keys to small trivially copyable values,
// for the engine's per-event lookups (live blocks by address, scopes by pid and device,
// group series by owner or stream, dense key dictionaries). std::unordered_map allocates a
// node per insert, which alone would cost most of the 200 ns an event may take at 5 million
// events per second; this one allocates only when it doubles, and a lookup is one multiply
// and, usually, one cache line.
//
// Linear probing with backward-shift deletion (no tombstones, so a map that sees millions
// of insert/erase pairs never degrades). The all-ones key marks an empty slot; that key is
// still storable, in a slot of its own beside the table.
//
// A slot keeps its key as bytes, so that with a 4-byte value it takes 12 B, not 16: the
// blocks' address index holds one per live block at 25-50 % load, and issue 5 allows 100 B
// of monitor memory per live block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace memtap {

template <class V>
class FlatMap {
 public:
  size_t size() const { return size_ + (has_max_key_ ? 1 : 0); }
  bool empty() const { return size() == 0; }

  // The value stored under `key`, or nullptr.
  const V* find(uint64_t key) const {
    if (key == kEmpty) return has_max_key_ ? &max_key_value_ : nullptr;
    if (slots_.empty()) return nullptr;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const uint64_t k = slots_[i].key();
      if (k == key) return &slots_[i].value;
      if (k == kEmpty) return nullptr;
    }
  }

  // Asks the CPU for the slot a lookup of `key` starts at, so that a lookup a few events
  // later finds it in the cache: these tables are larger than the cache, and each lookup
  // was otherwise a miss the engine waited for.
  void prefetch(uint64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(key)]);
  }

  // Inserts or overwrites.
  void put(uint64_t key, V value) {
    if (key == kEmpty) {
      has_max_key_ = true;
      max_key_value_ = value;
      return;
    }
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = home(key);
    uint64_t k;
    while ((k = slots_[i].key()) != kEmpty && k != key) i = (i + 1) & mask_;
    if (k == kEmpty) ++size_;
    slots_[i].set_key(key);
    slots_[i].value = value;
  }

  // Makes room for `n` entries in one rebuild, so that putting them rebuilds nothing.
  void reserve(size_t n) {
    size_t room = slots_.empty() ? 16 : slots_.size();
    while (n * 2 > room) room *= 2;
    if (room > slots_.size()) rebuild(room);
  }

  // Removes `key`; returns whether it was there, and its value through `value`.
  bool take(uint64_t key, V* value) {
    if (key == kEmpty) {
      if (!has_max_key_) return false;
      *value = max_key_value_;
      has_max_key_ = false;
      return true;
    }
    if (slots_.empty()) return false;
    size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      const uint64_t k = slots_[i].key();
      if (k == key) break;
      if (k == kEmpty) return false;
    }
    *value = slots_[i].value;
    // Backward shift: pull later entries of the same probe run into the hole, so that a
    // lookup never stops early at it.
    for (size_t j = (i + 1) & mask_; slots_[j].key() != kEmpty; j = (j + 1) & mask_) {
      size_t h = home(slots_[j].key());
      bool movable = (i <= j) ? (h <= i || h > j) : (h <= i && h > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].set_key(kEmpty);
    --size_;
    return true;
  }

  // Calls f(key, value) for every entry, in the order of the slots. Putting the entries in
  // that order into another, smaller map is quadratic: their homes there come in ascending
  // order too, far denser than its slots, and pile up in one probe run at its front, at
  // every size the smaller map passes through as it grows. (A fork child's copy of a
  // PyTorch parent's heap, so built, held the monitor for over 40 s.) Reserve the other
  // map's final size first.
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.key() != kEmpty) f(s.key(), s.value);
    if (has_max_key_) f(kEmpty, max_key_value_);
  }

  // Calls f(value) for every entry, to change the values where they lie (never the keys).
  template <class F>
  void for_each_value(F&& f) {
    for (Slot& s : slots_)
      if (s.key() != kEmpty) f(s.value);
    if (has_max_key_) f(max_key_value_);
  }

  size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }
  // How many times the table was rebuilt larger (tests: a bulk insert after reserve()
  // rebuilds once, where one that grows as it goes rebuilds at every doubling).
  size_t rebuilds() const { return rebuilds_; }

 private:
  struct Slot {
    unsigned char key_bytes[8];  // no 8-byte alignment: see the top of the file
    V value;

    uint64_t key() const {
      uint64_t k;
      std::memcpy(&k, key_bytes, sizeof k);
      return k;
    }
    void set_key(uint64_t k) { std::memcpy(key_bytes, &k, sizeof k); }
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  size_t home(uint64_t key) const {
    // Fibonacci hashing: the top bits of key * 2^64/phi spread sequential keys (addresses,
    // string ids) evenly.
    return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void grow() { rebuild(slots_.empty() ? 16 : slots_.size() * 2); }

  // Into `n` slots (a power of two, larger than now). Putting the old slots in their order is
  // fine here, unlike into a smaller map (for_each): their homes in a larger table keep
  // their spacing.
  void rebuild(size_t n) {
    ++rebuilds_;
    std::vector<Slot> old;
    old.swap(slots_);
    Slot empty{};
    empty.set_key(kEmpty);
    slots_.assign(n, empty);
    mask_ = n - 1;
    shift_ = 64;
    for (size_t m = n; m > 1; m >>= 1) --shift_;
    size_ = 0;
    for (const Slot& s : old)
      if (s.key() != kEmpty) put(s.key(), s.value);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;  // entries in slots_
  size_t rebuilds_ = 0;
  bool has_max_key_ = false;
  V max_key_value_{};
};

using FlatMapU64 = FlatMap<uint64_t>;

// The same map as an index: uint64 keys (addresses, pids, string ids) to uint32 positions in
// slabs and lists, with kNone for "absent", so that a lookup reads as one compare (the
// block analyses use it throughout).
class FlatIndex {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;  // "absent"; never stored as a value

  size_t size() const { return map_.size(); }
  size_t memory_bytes() const { return map_.memory_bytes(); }

  uint32_t find(uint64_t key) const {
    const uint32_t* value = map_.find(key);
    return value ? *value : kNone;
  }
  void prefetch(uint64_t key) const { map_.prefetch(key); }
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

}  // namespace memtap
