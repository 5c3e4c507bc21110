// The plain-data pickle reader (see pickle_reader.h).
//
// The pickle machine as Python's Unpickler runs it: a value stack, MARKs that open a
// segment of it (Python keeps the segment above the last MARK as "the stack" and the rest
// as a metastack; here a MARK is the stack's size when it was pushed), and a memo of
// values by index. An opcode sees only the segment above the last MARK, as in Python.
#include "monitor/store/reader/torch/pickle_reader.h"

#include <cstring>
#include <unordered_map>

#include "monitor/store/reader/torch/pickle_opcodes.h"
#include "monitor/store/reader/torch/pickle_text_opcodes.h"

namespace memtap::pickle {

namespace {

constexpr ValueId kNoneId = 0, kFalseId = 1, kTrueId = 2;  // made by Document()

}  // namespace

// Runs the pickle machine over the document's input, filling its arena.
class Builder {
 public:
  // The document takes the bytes: its strings are offsets into them.
  Builder(Document* doc, std::string bytes) : d_(*doc), in_(take(doc, std::move(bytes))) {
    // A snapshot has a value per ~19 bytes and an item per ~3.5: room for about twice as
    // many, so that growth seldom copies (room never touched costs no memory).
    d_.values_.reserve(in_.size() / 10 + 16);
    d_.items_.reserve(in_.size() / 2 + 16);
    d_.chunks_.reserve(in_.size() / 32 + 16);
  }

  bool run(std::string* error);

 private:
  using Value = Document::Value;
  using Chunk = Document::Chunk;

  static const std::string& take(Document* doc, std::string bytes) {
    doc->input_ = std::move(bytes);
    return doc->input_;
  }

  bool fail(size_t at, const std::string& what) {
    error_ = "byte " + std::to_string(at) + ": " + what;
    return false;
  }
  std::string name(uint8_t op) const { return opcode_text(op); }
  // Whether `n` more bytes follow the opcode at `at`.
  bool need(size_t at, uint8_t op, uint64_t n) {
    if (in_.size() - pos_ >= n) return true;
    return fail(at, "truncated: " + name(op) + " needs " + std::to_string(n) +
                        " more bytes, the input ends at byte " + std::to_string(in_.size()));
  }
  uint64_t read_le(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(in_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  // The rest of a text opcode's line, without its LF.
  bool read_line(size_t at, uint8_t op, std::string_view* line) {
    const size_t end = in_.find('\n', pos_);
    if (end == std::string::npos) {
      return fail(at, "truncated: " + name(op) + "'s line has no end before byte " +
                          std::to_string(in_.size()));
    }
    *line = std::string_view(in_).substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }

  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  size_t available() const { return stack_.size() - base(); }
  bool need_stack(size_t at, uint8_t op, size_t n) {
    if (available() >= n) return true;
    return fail(at, name(op) + " needs " + std::to_string(n) + " value" + (n == 1 ? "" : "s") +
                        " on the stack, " +
                        (marks_.empty() ? "it has " : "above the last MARK it has ") +
                        std::to_string(available()));
  }
  bool pop_mark(size_t at, uint8_t op, size_t* mark) {
    if (marks_.empty()) return fail(at, name(op) + " with no MARK before it");
    *mark = marks_.back();
    marks_.pop_back();
    return true;
  }

  bool new_value(size_t at, const Value& v, ValueId* id) {
    if (d_.values_.size() >= size_t(kNoValue) - 1) {
      return fail(at, "more than " + std::to_string(kNoValue - 1) + " values");
    }
    *id = ValueId(d_.values_.size());
    d_.values_.push_back(v);
    return true;
  }
  bool push_new(size_t at, const Value& v) {
    ValueId id;
    if (!new_value(at, v, &id)) return false;
    stack_.push_back(id);
    return true;
  }
  static Value container(Kind kind) {
    return {kind, 0, 0, (uint64_t(Document::kNoChunk) << 32) | Document::kNoChunk};
  }
  bool push_int(size_t at, int64_t v) { return push_new(at, {Kind::kInt, 0, 0, uint64_t(v)}); }
  bool push_text(size_t at, Kind kind, uint64_t offset, uint64_t length, bool owned) {
    if (length > UINT32_MAX) {
      return fail(
          at, "a string of " + std::to_string(length) + " bytes, longer than memtap reads (4 GiB)");
    }
    return push_new(at,
                    {kind, owned ? Document::kOwnedText : uint8_t(0), uint32_t(length), offset});
  }
  // A string or bytes opcode with an n-byte little-endian length.
  bool counted_text(size_t at, uint8_t op, size_t length_bytes, Kind kind) {
    if (!need(at, op, length_bytes)) return false;
    const uint64_t length = read_le(length_bytes);
    if (length_bytes == 4 && op == 'T' && length > INT32_MAX) {
      return fail(at, "BINSTRING with a negative length");
    }
    if (!need(at, op, length)) return false;
    const size_t offset = pos_;
    pos_ += length;
    return push_text(at, kind, offset, length, false);
  }
  // LONG1 / LONG4: a little-endian two's complement number of n bytes.
  bool long_bytes(size_t at, uint8_t op, size_t length_bytes) {
    if (!need(at, op, length_bytes)) return false;
    uint64_t n = read_le(length_bytes);
    if (length_bytes == 4 && n > INT32_MAX) return fail(at, "LONG4 with a negative length");
    if (!need(at, op, n)) return false;
    const auto* b = reinterpret_cast<const uint8_t*>(in_.data() + pos_);
    pos_ += n;
    // Bytes that only extend the sign say nothing: strip them (Python writes none).
    while (n > 1 &&
           ((b[n - 1] == 0x00 && !(b[n - 2] & 0x80)) || (b[n - 1] == 0xff && (b[n - 2] & 0x80)))) {
      --n;
    }
    if (n == 0) return push_int(at, 0);
    if (n <= 8) {
      uint64_t v = 0;
      for (size_t i = 0; i < n; ++i) v |= uint64_t(b[i]) << (8 * i);
      if (n < 8 && (b[n - 1] & 0x80)) v |= ~uint64_t(0) << (8 * n);  // sign-extend
      return push_int(at, int64_t(v));
    }
    if (n == 9 && b[8] == 0x00) {  // 2^63 .. 2^64-1: a uint64
      uint64_t v = 0;
      for (size_t i = 0; i < 8; ++i) v |= uint64_t(b[i]) << (8 * i);
      return push_new(at, {Kind::kInt, Document::kUnsigned, 0, v});
    }
    return push_new(at, {Kind::kBigInt, 0, 0, 0});
  }
  // INT / LONG: a decimal line (INT "01"/"00" are True/False; LONG may end in 'L').
  bool decimal_line(size_t at, uint8_t op) {
    std::string_view line;
    if (!read_line(at, op, &line)) return false;
    if (op == 'I' && (line == "01" || line == "00")) {
      stack_.push_back(line == "01" ? kTrueId : kFalseId);
      return true;
    }
    if (op == 'L' && !line.empty() && line.back() == 'L') line.remove_suffix(1);
    const DecimalValue v = parse_decimal(line);
    switch (v.kind) {
      case DecimalValue::Kind::kSigned:
        return push_int(at, v.value);
      case DecimalValue::Kind::kUnsigned:
        return push_new(at, {Kind::kInt, Document::kUnsigned, 0, v.unsigned_value});
      case DecimalValue::Kind::kBig:
        return push_new(at, {Kind::kBigInt, 0, 0, 0});
      case DecimalValue::Kind::kNotANumber:
        break;
    }
    return fail(at, name(op) + "'s line is not a number");
  }
  bool float_line(size_t at) {
    std::string_view line;
    if (!read_line(at, 'F', &line)) return false;
    const std::string text(line);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) {
      return fail(at, "FLOAT's line is not a number");
    }
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return push_new(at, {Kind::kFloat, 0, 0, bits});
  }
  // UNICODE and STRING: text decoded into the document's own buffer.
  bool text_line(size_t at, uint8_t op) {
    std::string_view line;
    if (!read_line(at, op, &line)) return false;
    std::string& owned = d_.owned_text_;
    const size_t offset = owned.size();
    std::string problem;
    const bool ok = op == 'V' ? decode_raw_unicode_escape(line, &owned, &problem)
                              : decode_quoted_string(line, &owned, &problem);
    if (!ok) {
      owned.resize(offset);
      return fail(at, name(op) + " with " + problem);
    }
    return push_text(at, Kind::kStr, offset, owned.size() - offset, true);
  }

  bool memo_put(size_t at, uint64_t index, ValueId value) {
    if (index > UINT32_MAX) return fail(at, "memo index " + std::to_string(index) + " too large");
    if (index < dense_.size()) {
      if (dense_[index] == kNoValue) ++memo_entries_;
      dense_[index] = value;
    } else if (index == dense_.size()) {
      dense_.push_back(value);
      ++memo_entries_;
    } else if (sparse_.insert_or_assign(index, value).second) {
      ++memo_entries_;  // Python's pickler numbers from 0 without gaps: only hand-made ones
    }
    return true;
  }
  bool memo_get(size_t at, uint8_t op, uint64_t index) {
    ValueId id = kNoValue;
    if (index < dense_.size()) {
      id = dense_[index];
    } else if (auto it = sparse_.find(index); it != sparse_.end()) {
      id = it->second;
    }
    if (id == kNoValue) {
      return fail(at, name(op) + " of memo " + std::to_string(index) + ", which was never stored");
    }
    stack_.push_back(id);
    return true;
  }

  // Adds `n` items to a container: onto its last chunk when that ends the arena (the
  // usual case, one batch after another), else as a new chunk of its own.
  bool append_items(size_t at, ValueId target, const ValueId* items, size_t n) {
    if (n == 0) return true;
    Value& v = d_.values_[target];
    if (d_.items_.size() + n > UINT32_MAX || uint64_t(v.count) + n > UINT32_MAX) {
      return fail(at, "more than " + std::to_string(UINT32_MAX) + " items");
    }
    const auto first = uint32_t(d_.items_.size());
    d_.items_.insert(d_.items_.end(), items, items + n);
    const auto tail = uint32_t(v.bits >> 32);
    if (tail != Document::kNoChunk && d_.chunks_[tail].first + d_.chunks_[tail].count == first) {
      d_.chunks_[tail].count += uint32_t(n);
    } else {
      if (d_.chunks_.size() >= Document::kNoChunk) return fail(at, "too many containers");
      const auto chunk = uint32_t(d_.chunks_.size());
      d_.chunks_.push_back({first, uint32_t(n), Document::kNoChunk});
      if (tail == Document::kNoChunk) {
        v.bits = (uint64_t(chunk) << 32) | chunk;
      } else {
        d_.chunks_[tail].next = chunk;
        v.bits = (uint64_t(chunk) << 32) | uint32_t(v.bits);
      }
    }
    v.count += uint32_t(n);
    return true;
  }
  // A new container of the values above position `from` of the stack, which it replaces.
  bool build_from(size_t at, Kind kind, size_t from) {
    ValueId id;
    if (!new_value(at, container(kind), &id)) return false;
    if (!append_items(at, id, stack_.data() + from, stack_.size() - from)) return false;
    stack_.resize(from);
    stack_.push_back(id);
    return true;
  }
  // APPEND(S), SETITEM(S), ADDITEMS: the values from `from` on go into the container just
  // below them.
  bool add_to(size_t at, uint8_t op, Kind want, size_t from) {
    if (from == 0 || from - 1 < base()) {
      return fail(at, name(op) + " finds no " + kind_name(want) + " to add to");
    }
    const ValueId target = stack_[from - 1];
    if (d_.values_[target].kind != want) {
      return fail(at, name(op) + " onto a " + kind_name(d_.values_[target].kind) + ", not a " +
                          kind_name(want));
    }
    if (want == Kind::kDict && (stack_.size() - from) % 2 != 0) {
      return fail(at, name(op) + " with an odd number of values (" +
                          std::to_string(stack_.size() - from) + ") for key, value pairs");
    }
    if (!append_items(at, target, stack_.data() + from, stack_.size() - from)) return false;
    stack_.resize(from);
    return true;
  }

  bool step(size_t at, uint8_t op);

  Document& d_;
  const std::string& in_;
  size_t pos_ = 0;
  std::vector<ValueId> stack_;
  std::vector<size_t> marks_;
  std::vector<ValueId> dense_;  // the memo: index -> value (kNoValue: never stored)
  std::unordered_map<uint64_t, ValueId> sparse_;
  uint64_t memo_entries_ = 0;  // Python's len(memo): where MEMOIZE stores
  bool stopped_ = false;
  std::string error_;
};

bool Builder::run(std::string* error) {
  while (!stopped_) {
    if (pos_ >= in_.size()) {
      *error = "byte " + std::to_string(in_.size()) +
               ": truncated: the input ends before the pickle's STOP opcode";
      return false;
    }
    const size_t at = pos_;
    const auto op = uint8_t(in_[pos_++]);
    if (!step(at, op)) {
      *error = error_;
      return false;
    }
  }
  return true;
}

bool Builder::step(size_t at, uint8_t op) {
  if (const char* why = opcode_refusal(op)) {
    return fail(at, "refused opcode " + name(op) + " (" + hex_byte(op) + "): " + why +
                        "; memtap reads only plain data (dicts, lists, strings, numbers) "
                        "from a pickle");
  }
  switch (op) {
    case 0x80: {  // PROTO
      if (!need(at, op, 1)) return false;
      const auto version = unsigned(read_le(1));
      if (version > 5) {
        return fail(at, "pickle protocol " + std::to_string(version) +
                            ", newer than memtap reads (2 to 5)");
      }
      return true;
    }
    case 0x95: {  // FRAME: a hint for buffering; its length must fit what is left
      if (!need(at, op, 8)) return false;
      const uint64_t length = read_le(8);
      if (length > in_.size() - pos_) {
        return fail(at, "truncated: a FRAME of " + std::to_string(length) +
                            " bytes, the input ends at byte " + std::to_string(in_.size()));
      }
      return true;
    }
    case '.':  // STOP
      if (!need_stack(at, op, 1)) return false;
      d_.root_ = stack_.back();
      stopped_ = true;
      return true;
    case '(':  // MARK
      marks_.push_back(stack_.size());
      return true;
    case '0':  // POP: the top value, or the last MARK when none is above it
      if (available() > 0) {
        stack_.pop_back();
        return true;
      }
      if (!marks_.empty()) {
        marks_.pop_back();
        return true;
      }
      return fail(at, "POP of an empty stack");
    case '1': {  // POP_MARK
      size_t mark;
      if (!pop_mark(at, op, &mark)) return false;
      stack_.resize(mark);
      return true;
    }
    case '2':  // DUP
      if (!need_stack(at, op, 1)) return false;
      stack_.push_back(stack_.back());
      return true;

    case 'N':
      stack_.push_back(kNoneId);
      return true;
    case 0x88:
      stack_.push_back(kTrueId);
      return true;
    case 0x89:
      stack_.push_back(kFalseId);
      return true;
    case 'J':  // BININT
      if (!need(at, op, 4)) return false;
      return push_int(at, int32_t(uint32_t(read_le(4))));
    case 'K':  // BININT1
      if (!need(at, op, 1)) return false;
      return push_int(at, int64_t(read_le(1)));
    case 'M':  // BININT2
      if (!need(at, op, 2)) return false;
      return push_int(at, int64_t(read_le(2)));
    case 0x8a:  // LONG1
      return long_bytes(at, op, 1);
    case 0x8b:  // LONG4
      return long_bytes(at, op, 4);
    case 'I':
    case 'L':
      return decimal_line(at, op);
    case 'G': {  // BINFLOAT: big-endian
      if (!need(at, op, 8)) return false;
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | uint8_t(in_[pos_ + size_t(i)]);
      pos_ += 8;
      return push_new(at, {Kind::kFloat, 0, 0, bits});
    }
    case 'F':
      return float_line(at);

    case 0x8c:  // SHORT_BINUNICODE
      return counted_text(at, op, 1, Kind::kStr);
    case 'X':  // BINUNICODE
      return counted_text(at, op, 4, Kind::kStr);
    case 0x8d:  // BINUNICODE8
      return counted_text(at, op, 8, Kind::kStr);
    case 'U':  // SHORT_BINSTRING (Python 3 reads it as str)
      return counted_text(at, op, 1, Kind::kStr);
    case 'T':  // BINSTRING
      return counted_text(at, op, 4, Kind::kStr);
    case 'C':  // SHORT_BINBYTES
      return counted_text(at, op, 1, Kind::kBytes);
    case 'B':  // BINBYTES
      return counted_text(at, op, 4, Kind::kBytes);
    case 0x8e:  // BINBYTES8
    case 0x96:  // BYTEARRAY8
      return counted_text(at, op, 8, Kind::kBytes);
    case 'V':
    case 'S':
      return text_line(at, op);

    case ']':
      return push_new(at, container(Kind::kList));
    case '}':
      return push_new(at, container(Kind::kDict));
    case ')':
      return push_new(at, container(Kind::kTuple));
    case 0x8f:
      return push_new(at, container(Kind::kSet));
    case 0x85:    // TUPLE1
    case 0x86:    // TUPLE2
    case 0x87: {  // TUPLE3
      const size_t n = size_t(op - 0x84);
      if (!need_stack(at, op, n)) return false;
      return build_from(at, Kind::kTuple, stack_.size() - n);
    }
    case 't':
    case 'l':
    case 'd':
    case 0x91: {  // TUPLE, LIST, DICT, FROZENSET: the values since the MARK
      size_t mark;
      if (!pop_mark(at, op, &mark)) return false;
      if (op == 'd' && (stack_.size() - mark) % 2 != 0) {
        return fail(at, "DICT with an odd number of values (" +
                            std::to_string(stack_.size() - mark) + ") for key, value pairs");
      }
      const Kind kind = op == 't'   ? Kind::kTuple
                        : op == 'l' ? Kind::kList
                        : op == 'd' ? Kind::kDict
                                    : Kind::kSet;
      return build_from(at, kind, mark);
    }
    case 'a':  // APPEND
      if (!need_stack(at, op, 2)) return false;
      return add_to(at, op, Kind::kList, stack_.size() - 1);
    case 's':  // SETITEM
      if (!need_stack(at, op, 3)) return false;
      return add_to(at, op, Kind::kDict, stack_.size() - 2);
    case 'e':     // APPENDS
    case 'u':     // SETITEMS
    case 0x90: {  // ADDITEMS
      size_t mark;
      if (!pop_mark(at, op, &mark)) return false;
      const Kind want = op == 'e' ? Kind::kList : op == 'u' ? Kind::kDict : Kind::kSet;
      return add_to(at, op, want, mark);
    }

    case 'h':  // BINGET
      if (!need(at, op, 1)) return false;
      return memo_get(at, op, read_le(1));
    case 'j':  // LONG_BINGET
      if (!need(at, op, 4)) return false;
      return memo_get(at, op, read_le(4));
    case 'q':  // BINPUT
    case 'r':  // LONG_BINPUT
    {
      const size_t n = op == 'q' ? 1 : 4;
      if (!need(at, op, n)) return false;
      const uint64_t index = read_le(n);
      if (!need_stack(at, op, 1)) return false;
      return memo_put(at, index, stack_.back());
    }
    case 0x94:  // MEMOIZE
      if (!need_stack(at, op, 1)) return false;
      return memo_put(at, memo_entries_, stack_.back());
    case 'g':
    case 'p': {  // GET, PUT: a decimal index on a line
      std::string_view line;
      if (!read_line(at, op, &line)) return false;
      uint64_t index = 0;
      if (line.empty() || line.size() > 10) return fail(at, name(op) + " without a memo index");
      for (char c : line) {
        if (c < '0' || c > '9') return fail(at, name(op) + " without a memo index");
        index = index * 10 + uint64_t(c - '0');
      }
      if (op == 'g') return memo_get(at, op, index);
      if (!need_stack(at, op, 1)) return false;
      return memo_put(at, index, stack_.back());
    }
    default:
      return fail(at, "unknown opcode " + hex_byte(op) + " (not a pickle, or a corrupt one)");
  }
}

int announced_protocol(const char* head, size_t size) {
  if (size < 2 || uint8_t(head[0]) != 0x80) return -1;
  return uint8_t(head[1]);
}

bool read_pickle(std::string bytes, Document* out, std::string* error) {
  *out = Document();
  Builder builder(out, std::move(bytes));
  if (!builder.run(error)) {
    *out = Document();
    return false;
  }
  return true;
}

}  // namespace memtap::pickle
