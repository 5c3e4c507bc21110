// See pickle_writer.h. Opcodes as pickletools documents them.
#include "monitor/store/export/pickle_writer.h"

#include <cstring>

namespace memtap {
namespace {

constexpr uint8_t kProto = 0x80, kStop = '.', kMark = '(', kEmptyDict = '}', kEmptyList = ']',
                  kSetItems = 'u', kAppends = 'e', kTuple2 = 0x86, kBinInt1 = 'K', kBinInt2 = 'M',
                  kBinInt = 'J', kLong1 = 0x8a, kBinFloat = 'G', kNewTrue = 0x88, kNewFalse = 0x89,
                  kNone = 'N', kShortBinUnicode = 0x8c, kBinUnicode = 'X', kBinPut = 'q',
                  kLongBinPut = 'r', kBinGet = 'h', kLongBinGet = 'j';

// Python's pickler batches SETITEMS and APPENDS by this many items.
constexpr uint32_t kBatchItems = 1000;

}  // namespace

PickleWriter::PickleWriter(TextFile* file) : file_(file) {
  put(kProto);
  put(4);
}

void PickleWriter::put_le(uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) put(uint8_t(value >> (8 * i)));
}

void PickleWriter::spill() {
  if (buffer_.size() >= (1 << 16)) {
    file_->write(buffer_);
    buffer_.clear();
  }
}

// A value is about to be written into the innermost container: its MARK comes first when
// a batch begins. A dict's batch holds whole pairs, so it is cut only before a key.
void PickleWriter::before_value() {
  spill();
  if (open_.empty()) return;
  Open& open = open_.back();
  if (open.kind == Kind::kPair) return;  // TUPLE2 takes the two values off the stack itself
  const bool dict = open.kind == Kind::kDict;
  const uint32_t per_batch = dict ? 2 * kBatchItems : kBatchItems;
  if (open.items == per_batch) flush_batch(open);
  if (open.items == 0) put(kMark);
  ++open.items;
}

void PickleWriter::flush_batch(Open& open) {
  if (open.items == 0) return;
  put(open.kind == Kind::kDict ? kSetItems : kAppends);
  open.items = 0;
}

void PickleWriter::begin_dict() {
  before_value();
  put(kEmptyDict);
  open_.push_back({Kind::kDict, 0});
}

void PickleWriter::begin_list() {
  before_value();
  put(kEmptyList);
  open_.push_back({Kind::kList, 0});
}

void PickleWriter::end_dict() {
  flush_batch(open_.back());
  open_.pop_back();
}

void PickleWriter::end_list() {
  end_dict();
}

void PickleWriter::begin_pair() {
  before_value();  // the tuple is one item of the enclosing container's batch
  open_.push_back({Kind::kPair, 0});
}

void PickleWriter::end_pair() {
  open_.pop_back();
  put(kTuple2);
}

void PickleWriter::str(std::string_view text) {
  before_value();
  if (text.size() < 256) {
    put(kShortBinUnicode);
    put(uint8_t(text.size()));
  } else {
    put(kBinUnicode);
    put_le(text.size(), 4);
  }
  buffer_.append(text);
}

void PickleWriter::integer(int64_t value) {
  if (value >= 0) {
    unsigned_integer(uint64_t(value));
    return;
  }
  before_value();
  if (value >= INT32_MIN) {
    put(kBinInt);
    put_le(uint64_t(uint32_t(int32_t(value))), 4);
    return;
  }
  // Two's complement, little-endian, as few bytes as keep the sign.
  int bytes = 8;
  while (bytes > 1 && ((value >> (8 * (bytes - 1))) & 0xff) == 0xff &&
         ((value >> (8 * (bytes - 2))) & 0x80) != 0) {
    --bytes;
  }
  put(kLong1);
  put(uint8_t(bytes));
  put_le(uint64_t(value), bytes);
}

void PickleWriter::unsigned_integer(uint64_t value) {
  before_value();
  if (value < 256) {
    put(kBinInt1);
    put(uint8_t(value));
  } else if (value < 65536) {
    put(kBinInt2);
    put_le(value, 2);
  } else if (value <= uint64_t(INT32_MAX)) {
    put(kBinInt);
    put_le(value, 4);
  } else {
    // LONG1: little-endian two's complement; a top bit set needs a zero byte above it.
    int bytes = 1;
    while (bytes < 8 && (value >> (8 * bytes)) != 0) ++bytes;
    const bool sign_byte = ((value >> (8 * (bytes - 1))) & 0x80) != 0;
    put(kLong1);
    put(uint8_t(bytes + (sign_byte ? 1 : 0)));
    put_le(value, bytes);
    if (sign_byte) put(0);
  }
}

void PickleWriter::real(double value) {
  before_value();
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put(kBinFloat);
  for (int i = 7; i >= 0; --i) put(uint8_t(bits >> (8 * i)));  // big-endian
}

void PickleWriter::boolean(bool value) {
  before_value();
  put(value ? kNewTrue : kNewFalse);
}

void PickleWriter::none() {
  before_value();
  put(kNone);
}

uint32_t PickleWriter::memo_put() {
  const uint32_t index = memo_size_++;
  if (index < 256) {
    put(kBinPut);
    put(uint8_t(index));
  } else {
    put(kLongBinPut);
    put_le(index, 4);
  }
  return index;
}

void PickleWriter::memo_get(uint32_t index) {
  before_value();
  if (index < 256) {
    put(kBinGet);
    put(uint8_t(index));
  } else {
    put(kLongBinGet);
    put_le(index, 4);
  }
}

void PickleWriter::finish() {
  put(kStop);
  file_->write(buffer_);
  buffer_.clear();
}

}  // namespace memtap
