// The plain data of a pickle (None, bools, ints, floats, strings, bytes, lists, tuples,
// dicts, sets) as pickle_reader.h reads it: an arena of small values that refer to each
// other by index, so a snapshot of a million trace entries stays a few hundred bytes an
// entry and the memo's shared objects (PyTorch shares its frame dicts and key strings) are
// one value however often they are referred to.
//
// Strings are offsets into the pickle's own bytes (the document keeps them), never copied;
// the few a text opcode spells with escapes are decoded into a buffer of the document.
// Containers grow the way a pickle fills them, a batch of items at a time (APPENDS of 1000
// items, with the nested containers between batches): each batch is a chunk of the item
// arena and a container is its chain of chunks, so no batch is ever moved. A container may
// hold itself (the memo allows it): nothing here walks a value recursively.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace memtap::pickle {

enum class Kind : uint8_t {
  kNone,
  kBool,
  kInt,     // fits an int64, or a uint64 (is_unsigned)
  kBigInt,  // does not fit 64 bits: kept as a kind, its value is not
  kFloat,
  kStr,
  kBytes,  // bytes and bytearray
  kList,
  kTuple,
  kDict,  // items alternate key, value
  kSet,   // set and frozenset
};

const char* kind_name(Kind kind);  // as Python names the type: "NoneType", "int", "dict", ...

using ValueId = uint32_t;
inline constexpr ValueId kNoValue = std::numeric_limits<ValueId>::max();

class Document {
 public:
  Document();

  ValueId root() const { return root_; }
  size_t value_count() const { return values_.size(); }
  // Bytes the arena holds (the pickle's bytes not counted): for the read's memory figures.
  size_t arena_bytes() const;

  Kind kind(ValueId id) const { return id == kNoValue ? Kind::kNone : values_[id].kind; }
  bool is(ValueId id, Kind kind) const { return id != kNoValue && values_[id].kind == kind; }

  // kBool or kInt as a signed number; false for other kinds, and for a uint64 past
  // INT64_MAX.
  bool get_int(ValueId id, int64_t* value) const;
  // kBool or kInt as an unsigned number; false for other kinds and negative numbers.
  bool get_uint(ValueId id, uint64_t* value) const;
  // kFloat, or an int / bool as a double.
  bool get_float(ValueId id, double* value) const;
  bool get_bool(ValueId id) const {
    return id != kNoValue && values_[id].kind == Kind::kBool && values_[id].bits;
  }
  // The text of a kStr or kBytes; empty for other kinds.
  std::string_view text(ValueId id) const;

  // Items of a list, tuple or set (a dict: keys and values alternating); 0 for others.
  size_t item_count(ValueId id) const;
  // The value stored under `key` (a str) in a dict; kNoValue when there is none or `dict`
  // is no dict. Python keeps the last of equal keys: so does this. Linear in the dict's
  // size: snapshot dicts have a dozen keys.
  ValueId find(ValueId dict, std::string_view key) const;

  // Visits the items of a list, tuple or set in order (nothing for other kinds). For a dict,
  // visit_pairs. `fn(ValueId)` returns false to stop.
  template <typename Fn>
  void visit_items(ValueId id, Fn&& fn) const {
    if (!is_container(id)) return;
    for (uint32_t c = head(id); c != kNoChunk; c = chunks_[c].next) {
      const Chunk& chunk = chunks_[c];
      for (uint32_t i = 0; i < chunk.count; ++i) {
        if (!fn(items_[size_t(chunk.first) + i])) return;
      }
    }
  }
  // Visits a dict's (key, value) pairs in the order they were set. `fn(key, value)` returns
  // false to stop.
  template <typename Fn>
  void visit_pairs(ValueId dict, Fn&& fn) const {
    if (!is(dict, Kind::kDict)) return;
    for (uint32_t c = head(dict); c != kNoChunk; c = chunks_[c].next) {
      const Chunk& chunk = chunks_[c];
      for (uint32_t i = 0; i + 1 < chunk.count; i += 2) {
        if (!fn(items_[size_t(chunk.first) + i], items_[size_t(chunk.first) + i + 1])) return;
      }
    }
  }

 private:
  friend class Builder;
  static constexpr uint32_t kNoChunk = std::numeric_limits<uint32_t>::max();
  static constexpr uint8_t kOwnedText = 1;  // kStr/kBytes: in owned_text_, not the input
  static constexpr uint8_t kUnsigned = 2;   // kInt: bits is a uint64 above INT64_MAX

  struct Value {
    Kind kind = Kind::kNone;
    uint8_t flags = 0;
    uint32_t count = 0;  // text length; a container's item count
    uint64_t bits = 0;   // int, double bits, text offset; a container's first | last chunk << 32
  };
  struct Chunk {
    uint32_t first = 0;  // in items_
    uint32_t count = 0;
    uint32_t next = kNoChunk;
  };

  bool is_container(ValueId id) const {
    if (id == kNoValue) return false;
    const Kind k = values_[id].kind;
    return k == Kind::kList || k == Kind::kTuple || k == Kind::kDict || k == Kind::kSet;
  }
  uint32_t head(ValueId id) const { return uint32_t(values_[id].bits); }

  std::string input_;       // the pickle's bytes: strings are offsets into them
  std::string owned_text_;  // decoded text of the text opcodes (protocol 0)
  std::vector<Value> values_;
  std::vector<Chunk> chunks_;
  std::vector<ValueId> items_;
  ValueId root_ = kNoValue;
};

}  // namespace memtap::pickle
