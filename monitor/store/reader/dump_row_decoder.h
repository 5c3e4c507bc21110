// One row of msMemScope's dump (a `memscope_dump` / `leaks_dump` row, or a line of its CSV
// export) decoded into a MemEvent.
//
// Both the SQLite and the CSV reader hand their columns over as DumpFields, so the mapping
// of design §6 lives here once: Event/Event Type -> kind and layer, Device Id, Ptr (hex or
// decimal), Attr (any of its spellings, attr_parser.h), names and stacks interned, and the
// file's timestamp unit (timestamp_unit.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/model/mem_event.h"
#include "monitor/store/reader/attr_parser.h"
#include "monitor/store/reader/string_interner.h"
#include "monitor/store/reader/timestamp_unit.h"

namespace memtap::reader {

// A numeric column as the source holds it: SQLite gives integers as integers (no text
// round trip at ten million rows), a CSV gives text.
struct NumberField {
  enum class Type : uint8_t { kAbsent, kInteger, kText };  // kAbsent: NULL or no such column
  Type type = Type::kAbsent;
  int64_t integer = 0;
  std::string_view text;
};

// The columns of one row; a column the file lacks stays empty / kAbsent.
struct DumpFields {
  std::string_view event;
  std::string_view event_type;
  std::string_view name;
  std::string_view device;
  std::string_view ptr;
  std::string_view attr;
  std::string_view stack_python;
  std::string_view stack_c;
  NumberField timestamp;
  NumberField pid;
  NumberField tid;
};

class DumpRowDecoder {
 public:
  // `ts_factor`: the file's timestamp unit when already known (TimestampUnit::factor_for);
  // 0 decides it from the first row.
  explicit DumpRowDecoder(StringTable* strings, int64_t ts_factor = 0)
      : interner_(strings), unit_(ts_factor) {}

  // Fills *event from `row`. False with *problem ("Ptr 'xyz' is not a hex or decimal
  // address") when a field holds what its column cannot mean; the row is then skipped.
  bool decode(const DumpFields& row, MemEvent* event, std::string* problem);

 private:
  bool apply_attr(std::string_view attr, MemEvent* event, std::string* problem);

  StringInterner interner_;
  TimestampUnit unit_;
  std::vector<AttrPair> pairs_;
  std::string scratch_;
  std::string attr_error_;
  std::string_view func_;  // an OOM_TRIGGER's Attr func, which names it (into the pairs)
};

}  // namespace memtap::reader
