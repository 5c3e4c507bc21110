// A Python pickle written as a stream of plain data: dicts, lists, tuples, str, int, float,
// bool and None, nothing that imports or builds an object. For the torch-snapshot export,
// whose file PyTorch's memory viewer (pytorch.org/memory_viz, torch/utils/viz/MemoryViz.js)
// reads with an unpickler of its own that knows only some opcodes: protocol 2 to 4, no
// frames needed, EMPTY_DICT/EMPTY_LIST/MARK/SETITEMS/APPENDS, TUPLE2, BININT1/BININT2/BININT/
// LONG1, BINFLOAT, NEWTRUE/NEWFALSE/NONE, SHORT_BINUNICODE/BINUNICODE, BINPUT/LONG_BINPUT,
// BINGET/LONG_BINGET, STOP. This writes those only: Python's pickle.load, memtap's own reader
// and the viewer all read it. The memo lets a value written once (a call stack shared by many
// trace entries) be referred to again, as PyTorch's own snapshots share their frames.
//
// The caller opens a container, writes its items (a dict's as key, value, key, value, ...)
// and closes it; items go out in batches of at most 1000 between MARK and SETITEMS/APPENDS,
// as Python's own pickler writes them, so the reader's stack stays small whatever the size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/store/export/text_file.h"

namespace memtap {

class PickleWriter {
 public:
  // Writes the protocol header (protocol 4) to `file`, which must outlive the writer.
  explicit PickleWriter(TextFile* file);

  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  // A tuple of the two values written between these.
  void begin_pair();
  void end_pair();

  void str(std::string_view text);  // UTF-8 as given
  void integer(int64_t value);
  void unsigned_integer(uint64_t value);
  void real(double value);
  void boolean(bool value);
  void none();
  // A dict's key.
  void key(std::string_view name) { str(name); }

  // Keeps the value just written in the memo; returns its index for memo_get.
  uint32_t memo_put();
  // The value memo_put kept under `index`, again (the same object, not a copy).
  void memo_get(uint32_t index);

  // Ends the pickle (STOP). Every container must be closed.
  void finish();

 private:
  enum class Kind : uint8_t { kDict, kList, kPair };
  struct Open {
    Kind kind;
    uint32_t items;  // values written since its last MARK (a dict: keys and values)
  };
  void before_value();
  void flush_batch(Open& open);
  void put(uint8_t byte) { buffer_.push_back(char(byte)); }
  void put_le(uint64_t value, int bytes);
  void spill();

  TextFile* file_;
  std::string buffer_;
  std::vector<Open> open_;
  uint32_t memo_size_ = 0;
};

}  // namespace memtap
