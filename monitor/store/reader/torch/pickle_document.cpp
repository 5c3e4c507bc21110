// The document's accessors (see pickle_document.h).
#include "monitor/store/reader/torch/pickle_document.h"

#include <cstring>

namespace memtap::pickle {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
    case Kind::kBigInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kStr:
      return "str";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kSet:
      return "set";
  }
  return "?";
}

Document::Document() {
  values_.push_back({Kind::kNone, 0, 0, 0});
  values_.push_back({Kind::kBool, 0, 0, 0});
  values_.push_back({Kind::kBool, 0, 0, 1});
}

size_t Document::arena_bytes() const {
  return values_.capacity() * sizeof(Value) + chunks_.capacity() * sizeof(Chunk) +
         items_.capacity() * sizeof(ValueId) + owned_text_.capacity();
}

bool Document::get_int(ValueId id, int64_t* value) const {
  if (id == kNoValue) return false;
  const Value& v = values_[id];
  if (v.kind != Kind::kInt && v.kind != Kind::kBool) return false;
  if (v.flags & kUnsigned) return false;
  *value = int64_t(v.bits);
  return true;
}

bool Document::get_uint(ValueId id, uint64_t* value) const {
  if (id == kNoValue) return false;
  const Value& v = values_[id];
  if (v.kind != Kind::kInt && v.kind != Kind::kBool) return false;
  if (!(v.flags & kUnsigned) && int64_t(v.bits) < 0) return false;
  *value = v.bits;
  return true;
}

bool Document::get_float(ValueId id, double* value) const {
  if (id == kNoValue) return false;
  const Value& v = values_[id];
  if (v.kind == Kind::kFloat) {
    std::memcpy(value, &v.bits, sizeof *value);
    return true;
  }
  if (v.kind != Kind::kInt && v.kind != Kind::kBool) return false;
  *value = (v.flags & kUnsigned) ? double(v.bits) : double(int64_t(v.bits));
  return true;
}

std::string_view Document::text(ValueId id) const {
  if (id == kNoValue) return {};
  const Value& v = values_[id];
  if (v.kind != Kind::kStr && v.kind != Kind::kBytes) return {};
  const std::string& from = (v.flags & kOwnedText) ? owned_text_ : input_;
  return std::string_view(from.data() + v.bits, v.count);
}

size_t Document::item_count(ValueId id) const {
  if (!is_container(id)) return 0;
  return values_[id].count;
}

ValueId Document::find(ValueId dict, std::string_view key) const {
  ValueId found = kNoValue;
  visit_pairs(dict, [&](ValueId k, ValueId v) {
    const Value& kv = values_[k];  // the length first: most keys differ in it
    if (kv.kind == Kind::kStr && kv.count == key.size() && text(k) == key) found = v;
    return true;
  });
  return found;
}

}  // namespace memtap::pickle
