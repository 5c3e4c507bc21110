// One dump row decoded into a MemEvent (see dump_row_decoder.h).
#include "monitor/store/reader/dump_row_decoder.h"

#include <limits>

#include "monitor/store/reader/event_vocabulary.h"
#include "monitor/store/reader/text_values.h"

namespace memtap::reader {
namespace {

std::string not_a(std::string_view column, std::string_view text, std::string_view what) {
  return std::string(column) + " " + quote_for_message(text) + " is not " + std::string(what);
}

bool read_timestamp(const NumberField& field, int64_t* raw, std::string* problem) {
  switch (field.type) {
    case NumberField::Type::kInteger:
      *raw = field.integer;
      return true;
    case NumberField::Type::kText: {
      const std::string_view text = trim(field.text);
      // Integers are the rule; a fraction (a CSV through a spreadsheet) is rounded.
      if (parse_i64(text, raw) || parse_decimal_times(text, 1, 0, raw)) return true;
      *problem = not_a("Timestamp(ns)", field.text, "a number");
      return false;
    }
    case NumberField::Type::kAbsent:
      break;
  }
  *problem = "Timestamp(ns) is empty";
  return false;
}

// Process Id / Thread Id: empty or N/A reads as 0 (unknown).
bool read_id(std::string_view column, const NumberField& field, uint32_t* id,
             std::string* problem) {
  int64_t value = 0;
  if (field.type == NumberField::Type::kInteger) {
    value = field.integer;
  } else if (field.type == NumberField::Type::kText && !is_absent(field.text)) {
    if (!parse_i64(trim(field.text), &value)) {
      *problem = not_a(column, field.text, "a number");
      return false;
    }
  }
  if (value < 0 || value > int64_t(std::numeric_limits<uint32_t>::max())) {
    *problem = std::string(column) + " " + std::to_string(value) + " is out of range";
    return false;
  }
  *id = static_cast<uint32_t>(value);
  return true;
}

// An Attr number: decimal or 0x-hex, or a decimal with a fraction (rounded).
bool attr_u64(std::string_view text, uint64_t* value) {
  if (parse_u64(text, value)) return true;
  int64_t rounded = 0;
  if (!parse_decimal_times(text, 1, 0, &rounded) || rounded < 0) return false;
  *value = static_cast<uint64_t>(rounded);
  return true;
}

bool attr_i64(std::string_view text, int64_t* value) {
  uint64_t unsigned_value = 0;
  if (parse_u64(text, &unsigned_value)) {
    if (unsigned_value > uint64_t(std::numeric_limits<int64_t>::max())) return false;
    *value = static_cast<int64_t>(unsigned_value);
    return true;
  }
  return parse_decimal_times(text, 1, 0, value);
}

}  // namespace

bool DumpRowDecoder::decode(const DumpFields& row, MemEvent* event, std::string* problem) {
  *event = MemEvent{};
  const EventClass event_class = classify_event(trim(row.event), trim(row.event_type));
  event->kind = event_class.kind;
  event->layer = event_class.layer;

  int64_t raw_ts = 0;
  if (!read_timestamp(row.timestamp, &raw_ts, problem)) return false;
  if (!read_id("Process Id", row.pid, &event->pid, problem)) return false;
  if (!read_id("Thread Id", row.tid, &event->tid, problem)) return false;
  if (!parse_device(row.device, &event->device)) {
    *problem = not_a("Device Id", row.device, "cpu, host, N/A or a device number");
    return false;
  }
  if (!is_absent(row.ptr) && !parse_u64(trim(row.ptr), &event->addr)) {
    *problem = not_a("Ptr", row.ptr, "a hex or decimal address");
    return false;
  }
  if (!apply_attr(row.attr, event, problem)) return false;

  // Only a row that decoded fully may fix the file's unit, so a garbage first row cannot.
  if (!unit_.to_ns(raw_ts, &event->ts_ns)) {
    *problem = "Timestamp(ns) " + std::to_string(raw_ts) +
               " is out of range: the file's times are microseconds (as its first one is), "
               "and this one is beyond what nanoseconds since 1970 can hold";
    return false;
  }
  // msMemScope names every OOM_TRIGGER "OOM_Trigger" and puts the API in Attr func; memtap
  // writes the API in both. (A read that leaves names out leaves this one out too.)
  event->name = interner_.intern(!func_.empty() && !row.name.empty() ? func_ : row.name);
  event->stack_python = interner_.intern(row.stack_python);
  event->stack_c = interner_.intern(row.stack_c);
  return true;
}

bool DumpRowDecoder::apply_attr(std::string_view attr, MemEvent* event, std::string* problem) {
  if (!split_attr(attr, &pairs_, &scratch_, &attr_error_)) {
    *problem = "Attr " + quote_for_message(attr) + ": " + attr_error_;
    return false;
  }
  // SNAPSHOT and a device's START_TRACE give the device's capacity; a pool's rows, its size.
  const bool capacity =
      event->kind == MemEventKind::kSnapshot || event->kind == MemEventKind::kTraceStart;
  func_ = {};
  for (const AttrPair& pair : pairs_) {
    const std::string_view key = pair.key;
    const std::string_view value = pair.value;
    if (value.empty()) continue;  // `owner:` and friends: no value given
    bool ok = true;
    uint64_t number = 0;
    if (key == "size") {
      // 2025-04 files write a PTA FREE's size as a delta ("size:-512"): the block's size
      // is its magnitude.
      int64_t signed_size = 0;
      ok = attr_u64(value, &event->size_bytes) || attr_i64(value, &signed_size);
      if (ok && signed_size < 0) event->size_bytes = uint64_t(0) - uint64_t(signed_size);
    } else if (key == "addr" || key == "ptr") {
      // `Ptr` wins; older rows of some events carry the address only here (msMemScope's
      // OOM rows: `ptr`).
      ok = attr_u64(value, &number);
      if (ok && event->addr == 0) event->addr = number;
    } else if (key == "req_size") {
      ok = attr_u64(value, &event->size_bytes);  // OOM_TRIGGER: the bytes asked for
    } else if (key == "func" && event->kind == MemEventKind::kOom) {
      func_ = value;
    } else if (key == "allocation_id") {
      ok = attr_u64(value, &event->allocation_id);
    } else if (key == "owner") {
      event->owner = interner_.intern(value);
    } else if (key == "used") {
      ok = attr_i64(value, &event->pool_used);
    } else if (key == "pending") {
      // memtap's PTA FREE whose block another stream still used: a FREE_COMPLETED follows.
      ok = attr_u64(value, &number);
      event->free_pending = ok && number != 0 && event->kind == MemEventKind::kFree;
    } else if (key == "total") {
      ok = attr_i64(value, capacity ? &event->snap_total : &event->pool_total);
    } else if (key == "stream" || key == "streamId") {  // streamId: msMemScope's kernels
      ok = attr_u64(value, &event->stream);
    } else if (key == "kind") {
      event->is_mmap = equals_ignore_case(value, "mmap");
    } else if (key == "inherited_from") {
      // A fork child's copy of its parent's block; MemEvent has no field for the parent
      // yet, but a malformed value still marks the row as damaged.
      ok = attr_u64(value, &number);
    } else if (key == "allocated") {
      ok = attr_i64(value, &event->snap_allocated);
    } else if (key == "reserved") {
      ok = attr_i64(value, &event->snap_reserved);
    } else if (key == "max_allocated") {
      ok = attr_i64(value, &event->snap_max_allocated);
    } else if (key == "max_reserved") {
      ok = attr_i64(value, &event->snap_max_reserved);
    } else if (key == "app_reserved") {
      ok = attr_i64(value, &event->snap_app_reserved);
    } else if (key == "free") {
      ok = attr_i64(value, &event->snap_free);
    } else if (key == "type" && event->kind == MemEventKind::kAccess) {
      event->layer = layer_from_text(value);  // ACCESS: the pool the block belongs to
    }
    // Other keys (MID, dtype, shape, ...) carry nothing the event model holds.
    if (!ok) {
      *problem = "Attr " + std::string(key) + " " + quote_for_message(value) + " is not a number";
      return false;
    }
  }
  return true;
}

}  // namespace memtap::reader
