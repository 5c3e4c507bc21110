// The keys the analyses group blocks by: owner label, stack and name (operator).
//
// A block's stack is its Python stack, else its C stack, else its name, so that a
// recording without stacks still groups by something a reader recognises. Keys are made
// dense per (process, device), so the per-key figures of an account are plain vectors
// indexed by key and a FREE finds them through the indices its block kept, with no lookup.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "monitor/engine/flat_map.h"
#include "monitor/model/mem_event.h"

namespace memtap::blocks {

// What a key's label is.
enum class KeyKind : uint8_t { kOwner, kStackPython, kStackC, kName };

// The grouping dimensions, in the order the per-key arrays use. kByOwnerStack groups by
// (owner, stack) pair, so that a report can name the stacks that hold each owner's bytes;
// its keys are pair_tag()s of the other two dimensions' dense keys, not labels.
enum Dim : int { kByOwner = 0, kByStack = 1, kByName = 2, kByOwnerStack = 3 };
constexpr int kDims = 4;
constexpr int kLabelDims = 3;  // the dimensions whose keys are labels (all but the pairs)

inline uint64_t pair_tag(uint32_t owner_key, uint32_t stack_key) {
  return (uint64_t(owner_key) << 32) | stack_key;
}
inline uint32_t pair_owner_key(uint64_t tag) {
  return uint32_t(tag >> 32);
}
inline uint32_t pair_stack_key(uint64_t tag) {
  return uint32_t(tag);
}

// (kind << 32) | string id.
inline uint64_t stack_key_of(const MemEvent& e) {
  if (e.stack_python != 0) return (uint64_t(KeyKind::kStackPython) << 32) | e.stack_python;
  if (e.stack_c != 0) return (uint64_t(KeyKind::kStackC) << 32) | e.stack_c;
  return (uint64_t(KeyKind::kName) << 32) | e.name;
}

struct KeyIndex {
  std::array<FlatIndex, kDims> index;
  // dense key -> (kind << 32) | string id
  std::array<std::vector<uint64_t>, kDims> keys;

  // The last key asked for per dimension: consecutive blocks mostly share their keys.
  std::array<uint64_t, kDims> last_tag{~0ull, ~0ull, ~0ull, ~0ull};
  std::array<uint32_t, kDims> last_key{};

  uint32_t key(Dim dim, uint64_t tagged) {
    if (tagged == last_tag[dim]) return last_key[dim];
    uint32_t k = index[dim].find(tagged);
    if (k == FlatIndex::kNone) {
      k = uint32_t(keys[dim].size());
      keys[dim].push_back(tagged);
      index[dim].insert(tagged, k);
    }
    last_tag[dim] = tagged;
    last_key[dim] = k;
    return k;
  }
  // The dense key of a tag seen before; FlatIndex::kNone otherwise.
  uint32_t find(Dim dim, uint64_t tagged) const { return index[dim].find(tagged); }
  size_t count(Dim dim) const { return keys[dim].size(); }
  KeyKind kind(Dim dim, uint32_t k) const { return KeyKind(keys[dim][k] >> 32); }
  uint32_t string_id(Dim dim, uint32_t k) const { return uint32_t(keys[dim][k]); }
};

inline uint64_t owner_tag(uint32_t owner) {
  return (uint64_t(KeyKind::kOwner) << 32) | owner;
}
inline uint64_t name_tag(uint32_t name) {
  return (uint64_t(KeyKind::kName) << 32) | name;
}

// One key as a report shows it.
struct KeyLabel {
  KeyKind kind = KeyKind::kOwner;
  uint32_t string_id = 0;  // 0: none given (no owner, no stack and no name)
  std::string label;       // the string itself; "" when string_id is 0
};

inline KeyLabel label_of(const KeyIndex& keys, const StringTable& strings, Dim dim, uint32_t k) {
  KeyLabel l;
  l.kind = keys.kind(dim, k);
  l.string_id = keys.string_id(dim, k);
  if (l.string_id < strings.size()) l.label = strings.get(l.string_id);
  return l;
}

}  // namespace memtap::blocks
