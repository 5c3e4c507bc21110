// How memtap stores a recording's rows: compact integer tables, and msMemScope's
// `memscope_dump` as a VIEW over them (design §6).
//
// msMemScope's own table spells every value as text (Ptr in hex, Attr as JSON): about
// 140 bytes a row, and SQLite takes such rows at half the rate of integer ones. memtap
// writes one integer row per event instead (about 35 bytes without stacks: zeros cost no
// data byte in SQLite's record format) and defines `memscope_dump` as a view that spells
// the rows exactly as memscope_format.h does, so MindStudio Insight and msMemScope's tools
// read the file as before, while memtap reads the integers directly.
//
//   memtap_format        one row: version, timestamp_base_ns
//   memtap_event         one row per memscope_dump row (ID is the same); columns below
//   memtap_thread        thread (a small number) -> process_id, thread_id
//   memtap_string        id -> text: names, owners, stacks (the Session's string ids)
//   memtap_event_chunk   every kEventChunkRows rows: the chunk's first ID and its smallest
//                        timestamp_offset_ns, so a time range finds its rows without an index
//
// memtap_event's columns are DumpRow's fields: event and event_type as DumpEvent /
// DumpEventType values (fixed here: they are on disk), timestamp_offset_ns (timestamp_ns
// minus memtap_format.timestamp_base_ns: 6 bytes for a 39-hour run instead of 8), thread,
// ptr, size_bytes, allocation_id, name, owner, stack_python, stack_c (string ids, 0: none)
// and `detail`, the one field whose meaning depends on the event (see pack_detail): one
// column for four rare fields keeps every row's header three bytes shorter.
#pragma once

#include <cstdint>
#include <string>

#include "monitor/engine/dump_row.h"

namespace memtap {

inline constexpr int kCompactFormatVersion = 1;
inline constexpr int64_t kEventChunkRows = 4096;

// The values stored in memtap_event.event / event_type are the enums' own: these must not
// change, or older files would read wrong.
static_assert(static_cast<int>(DumpEvent::kMalloc) == 0 &&
              static_cast<int>(DumpEvent::kFree) == 1 &&
              static_cast<int>(DumpEvent::kSystem) == 2 &&
              static_cast<int>(DumpEvent::kSnapshot) == 3 &&
              static_cast<int>(DumpEvent::kMstx) == 4 &&
              static_cast<int>(DumpEvent::kOpLaunch) == 5);
static_assert(static_cast<int>(DumpEventType::kHost) == 0 &&
              static_cast<int>(DumpEventType::kStep) == 4 &&
              static_cast<int>(DumpEventType::kAtenEnd) == 9);

// memtap_event.detail: MALLOC/FREE: bit 0 is_mmap, the rest inherited_from_pid; SYSTEM
// STEP: step; SNAPSHOT: total_bytes; otherwise 0.
int64_t pack_detail(const DumpRow& row);
// The inverse, into a row whose event and event_type are set.
void unpack_detail(int64_t detail, DumpRow* row);

// CREATE TABLE for the compact tables, with the memtap_format row (timestamp_base_ns 0
// until the first row sets it), and CREATE VIEW memscope_dump: msMemScope's column
// names in its order, each value spelled as memscope_format.h spells it.
std::string compact_schema_sql();

// INSERT statements; parameters in column order.
inline constexpr const char* kInsertEventSql =
    "INSERT INTO memtap_event VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
inline constexpr const char* kInsertThreadSql = "INSERT INTO memtap_thread VALUES (?1, ?2, ?3)";
inline constexpr const char* kInsertStringSql =
    "INSERT OR REPLACE INTO memtap_string VALUES (?1, ?2)";
inline constexpr const char* kSetTimestampBaseSql =
    "UPDATE memtap_format SET timestamp_base_ns = ?1";
inline constexpr const char* kInsertEventChunkSql =
    "INSERT OR REPLACE INTO memtap_event_chunk VALUES (?1, ?2)";

}  // namespace memtap
