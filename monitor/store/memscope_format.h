// The text of a DumpRow's columns in msMemScope's `memscope_dump` table (design §6).
//
// Pure functions, no SQLite: the writer uses them, and so can anything that exports or
// compares the same encoding. Variable text is formatted into fixed buffers the caller
// owns, so writing a row builds no std::string. Constant text (`MALLOC`, `cpu`, `N/A`)
// points at string literals, which live for the whole program.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "monitor/engine/dump_row.h"

namespace memtap {

// `Ptr`: "0x" and 16 hex digits.
inline constexpr size_t kPtrTextMax = 18;
// `Attr` at its longest: every number at its widest, plus "kind" and "inherited_from".
inline constexpr size_t kAttrTextMax = 160;

// `Name` of a SYSTEM STEP row: the step's number in decimal.
inline constexpr size_t kStepTextMax = 20;

using PtrText = std::array<char, kPtrTextMax>;
using AttrText = std::array<char, kAttrTextMax>;
using StepText = std::array<char, kStepTextMax>;

// `Name` of a row with no name (msMemScope's "no value").
inline constexpr std::string_view kDumpNameText = "N/A";
// `Call Stack(Python)` and `Call Stack(C)` of a row without one: empty text (msMemScope
// writes '', not NULL).
inline constexpr std::string_view kDumpCallStackText = "";

// `Event`: MALLOC, FREE, SYSTEM, SNAPSHOT, MSTX, OP_LAUNCH.
std::string_view dump_event_text(DumpEvent event);
// `Event Type`: HOST, START_TRACE, STOP_TRACE, SNAPSHOT, STEP, Mark, Range_start,
// Range_end, ATEN_START, ATEN_END.
std::string_view dump_event_type_text(DumpEventType type);
// `Device Id`: `cpu` for host memory (MALLOC/FREE/SNAPSHOT), `N/A` for events of no device.
std::string_view dump_device_id_text(DumpEvent event);
// `Name` of a SYSTEM STEP row: its number, written into `out`.
std::string_view format_step_text(uint64_t step, StepText& out);

// The owner's member of `Attr`, to follow the size: `","owner":"` and the label as JSON
// string content (quotes, backslashes and control characters escaped). Built once per
// owner label by the writer, then copied into every row of that owner.
std::string format_owner_attr(std::string_view owner);

// `0x%016llx` (lower case), written into `out`.
std::string_view format_ptr_hex(uint64_t ptr, PtrText& out);
// `Ptr`: the address for MALLOC/FREE, `N/A` otherwise.
std::string_view dump_ptr_text(const DumpRow& row, PtrText& out);
// `Attr`: for MALLOC/FREE a JSON object whose values are all strings, in this order:
//   {"allocation_id":"4","addr":"0x000012c080000000","size":"6356992"}
// then `owner_attr` (format_owner_attr; empty: no owner), ,"kind":"mmap" for an anonymous
// mapping and ,"inherited_from":"<pid>" for a block a fork() child inherited. SNAPSHOT:
// {"app_reserved":"...","total":"..."}. Empty for SYSTEM, MSTX and OP_LAUNCH. Written into
// `out`, or into `spill` when an owner makes it longer than `out` holds.
std::string_view dump_attr_text(const DumpRow& row, std::string_view owner_attr, AttrText& out,
                                std::string& spill);

}  // namespace memtap
