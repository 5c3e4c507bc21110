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

#include "monitor/model/dump_row.h"

namespace memtap {

// `Ptr`: "0x" and 16 hex digits.
inline constexpr size_t kPtrTextMax = 18;
// `Attr` at its longest without text: every number at its widest, plus "kind",
// "inherited_from" and "stream", or a PTA block's "total", "used", "pending" and "stream".
inline constexpr size_t kAttrTextMax = 208;

// `Name` of a SYSTEM STEP row: the step's number in decimal.
inline constexpr size_t kStepTextMax = 20;

// `Device Id` of a row about a device: its ordinal in decimal.
inline constexpr size_t kDeviceTextMax = 11;

using PtrText = std::array<char, kPtrTextMax>;
using AttrText = std::array<char, kAttrTextMax>;
using StepText = std::array<char, kStepTextMax>;
using DeviceText = std::array<char, kDeviceTextMax>;

// `Name` of a row with no name (msMemScope's "no value").
inline constexpr std::string_view kDumpNameText = "N/A";
// `Call Stack(Python)` and `Call Stack(C)` of a row without one: empty text (msMemScope
// writes '', not NULL).
inline constexpr std::string_view kDumpCallStackText = "";

// `Event`: MALLOC, FREE, SYSTEM, SNAPSHOT, MSTX, OP_LAUNCH, KERNEL_LAUNCH, OOM_DETAIL,
// FREE_COMPLETED.
std::string_view dump_event_text(DumpEvent event);
// `Event Type`: HOST, START_TRACE, STOP_TRACE, SNAPSHOT, STEP, Mark, Range_start,
// Range_end, ATEN_START, ATEN_END, HAL, HOST_PINNED, KERNEL_LAUNCH, OOM_TRIGGER,
// OOM_TOP_ALLOC, PTA.
std::string_view dump_event_type_text(DumpEventType type);
// `Device Id` of a row about no device (DumpRow::device kDumpNoDevice): `cpu` for host
// memory (MALLOC/FREE/SNAPSHOT), `N/A` for the others.
std::string_view dump_device_id_text(DumpEvent event);
// `Device Id` of any row: the ordinal for a row about a device, else as above.
std::string_view dump_device_id_text(const DumpRow& row, DeviceText& out);
// Whether the row's Attr holds a block's members (allocation_id, addr, size, owner) and its
// `Ptr` the block's address: MALLOC, FREE and OOM_TOP_ALLOC.
bool dump_row_has_block(const DumpRow& row);
// Whether a block's Attr ends with its stream: a HAL, HOST_PINNED or PTA MALLOC/FREE with one
// (heap blocks have none).
bool dump_block_has_stream(const DumpRow& row);
// Whether the row is a PTA MALLOC/FREE, whose Attr says its pool's used and total after it
// (and pending on a FREE).
bool dump_row_is_pool_block(const DumpRow& row);
// `Name` of a SYSTEM STEP row: its number, written into `out`.
std::string_view format_step_text(uint64_t step, StepText& out);
// `Name` of any row whose name string is `name`: a STEP row's number (into `step`), else the
// name, or kDumpNameText for a row without one.
std::string_view dump_name_text(const DumpRow& row, std::string_view name, StepText& step);

// `text` as JSON string content: quotes, backslashes and control characters escaped.
std::string json_string_content(std::string_view text);

// The owner's member of `Attr`, to follow the size: `","owner":"` and the label as JSON
// string content. Built once per owner label by the writer, then copied into every row of
// that owner.
std::string format_owner_attr(std::string_view owner);

// `0x%016llx` (lower case), written into `out`.
std::string_view format_ptr_hex(uint64_t ptr, PtrText& out);
// `Ptr`: the address for MALLOC/FREE/OOM_TOP_ALLOC/FREE_COMPLETED, `N/A` otherwise.
std::string_view dump_ptr_text(const DumpRow& row, PtrText& out);
// `Attr`, a JSON object whose values are all strings. MALLOC/FREE/OOM_TOP_ALLOC, in this
// order:
//   {"allocation_id":"4","addr":"0x000012c080000000","size":"6356992"}
// then `owner_attr` (format_owner_attr; empty: no owner), ,"kind":"mmap" for an anonymous
// mapping, ,"inherited_from":"<pid>" for a block a fork() child inherited and
// ,"stream":"<stream>" when dump_block_has_stream. A PTA block (dump_row_is_pool_block), as
// msMemScope's: after the owner ,"total":"<reserved>" (when known) ,"used":"<bytes>" and on
// a FREE whose block is still in use on another stream ,"pending":"1", then the stream.
// FREE_COMPLETED: {"size":"..."}. SNAPSHOT: {"app_reserved":"...", "total":"..."}; of a
// device's pool (Event Type PTA): {"allocated":"...","reserved":"..."}, and with the pool's
// own peaks (has_pool_peaks) ,"max_allocated":"...","max_reserved":"..." after them. KERNEL_LAUNCH:
// {"stream":"..."}. OOM_TRIGGER, with msMemScope's keys:
// {"func":"<func_json>","req_size":"<bytes asked>","size":"<the same>","stream":"..."}. A device's
// START_TRACE (msMemScope's keys too): {"free":"...","total":"..."}. Empty for the other SYSTEM
// rows, MSTX and OP_LAUNCH. Numbers in decimal. Written into `out`, or into `spill` when text makes
// it longer than `out` holds.
std::string_view dump_attr_text(const DumpRow& row, std::string_view owner_attr, AttrText& out,
                                std::string& spill, std::string_view func_json = {});

}  // namespace memtap
