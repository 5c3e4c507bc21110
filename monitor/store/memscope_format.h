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
#include <string_view>

#include "monitor/engine/dump_row.h"

namespace memtap {

// `Ptr`: "0x" and 16 hex digits.
inline constexpr size_t kPtrTextMax = 18;
// `Attr` at its longest: every number at its widest, plus "kind" and "inherited_from".
inline constexpr size_t kAttrTextMax = 160;

using PtrText = std::array<char, kPtrTextMax>;
using AttrText = std::array<char, kAttrTextMax>;

// `Name`: memtap records no operator or kernel names yet.
inline constexpr std::string_view kDumpNameText = "N/A";
// `Call Stack(Python)` and `Call Stack(C)`: empty text (msMemScope writes '', not NULL).
inline constexpr std::string_view kDumpCallStackText = "";

// `Event`: MALLOC, FREE, SYSTEM.
std::string_view dump_event_text(DumpEvent event);
// `Event Type`: HOST, START_TRACE, STOP_TRACE.
std::string_view dump_event_type_text(DumpEventType type);
// `Device Id`: `cpu` for host memory (MALLOC/FREE), `N/A` for events of no device.
std::string_view dump_device_id_text(DumpEvent event);

// `0x%016llx` (lower case), written into `out`.
std::string_view format_ptr_hex(uint64_t ptr, PtrText& out);
// `Ptr`: the address for MALLOC/FREE, `N/A` otherwise.
std::string_view dump_ptr_text(const DumpRow& row, PtrText& out);
// `Attr`: for MALLOC/FREE a JSON object whose values are all strings, in this order:
//   {"allocation_id":"4","addr":"0x000012c080000000","size":"6356992"}
// then ,"kind":"mmap" for an anonymous mapping and ,"inherited_from":"<pid>" for a block
// a fork() child inherited. Empty for SYSTEM.
std::string_view dump_attr_text(const DumpRow& row, AttrText& out);

}  // namespace memtap
