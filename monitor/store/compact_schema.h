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
//   memtap_event_stream  ID -> stream, for the MALLOC/FREE rows that have one (asynchronous
//                        device allocations: few rows, and no column in every row for them;
//                        a framework pool's blocks: every one)
//   memtap_event_pool    ID -> used, total (NULL: not known), pending (0 or 1): a PTA
//                        MALLOC/FREE row's pool after it (the pool's blocks only, so no
//                        column in every row for them); a device pool's SNAPSHOT that came
//                        with the pool's own peaks: max_allocated as used, max_reserved as
//                        total, pending 0
//
// memtap_event's columns are DumpRow's fields: event and event_type as DumpEvent /
// DumpEventType values (fixed here: they are on disk), timestamp_offset_ns (timestamp_ns
// minus memtap_format.timestamp_base_ns: 6 bytes for a 39-hour run instead of 8), thread,
// ptr, size_bytes, allocation_id, name, owner, stack_python, stack_c (string ids, 0: none)
// and `detail`, the one field whose meaning depends on the event (see pack_columns): one
// column for several rare fields keeps every row's header bytes shorter. Rows that have no
// block put other numbers in ptr and size_bytes (pack_columns says which).
//
// Version 2 added the device rows (HAL, HOST_PINNED, KERNEL_LAUNCH, OOM_DETAIL, a device's
// START_TRACE) and memtap_event_stream; version 3 the framework pool's (PTA MALLOC/FREE,
// FREE_COMPLETED, a device pool's SNAPSHOT) and memtap_event_pool. Older files read the same
// as before. A SNAPSHOT's memtap_event_pool row (its peaks) came later within version 3: a
// reader that does not look for it reads every row as before, only without the peaks (and
// the view in the file, which spells them, is the writer's), so no version was spent on it.
#pragma once

#include <cstdint>
#include <string>

#include "monitor/model/dump_row.h"

namespace memtap {

inline constexpr int kCompactFormatVersion = 3;
inline constexpr int kCompactFormatOldestVersion = 1;  // what a reader still accepts
inline constexpr int64_t kEventChunkRows = 4096;

// The values stored in memtap_event.event / event_type are the enums' own: these must not
// change, or older files would read wrong.
static_assert(static_cast<int>(DumpEvent::kMalloc) == 0 &&
              static_cast<int>(DumpEvent::kFree) == 1 &&
              static_cast<int>(DumpEvent::kSystem) == 2 &&
              static_cast<int>(DumpEvent::kSnapshot) == 3 &&
              static_cast<int>(DumpEvent::kMstx) == 4 &&
              static_cast<int>(DumpEvent::kOpLaunch) == 5);
static_assert(static_cast<int>(DumpEvent::kTraceSlice) == 6 &&
              static_cast<int>(DumpEvent::kKernelLaunch) == 7 &&
              static_cast<int>(DumpEvent::kOomDetail) == 8 &&
              static_cast<int>(DumpEvent::kFreeCompleted) == 9);
static_assert(static_cast<int>(DumpEventType::kHost) == 0 &&
              static_cast<int>(DumpEventType::kStep) == 4 &&
              static_cast<int>(DumpEventType::kAtenEnd) == 9 &&
              static_cast<int>(DumpEventType::kHal) == 10 &&
              static_cast<int>(DumpEventType::kHostPinned) == 11 &&
              static_cast<int>(DumpEventType::kKernelLaunch) == 12 &&
              static_cast<int>(DumpEventType::kOomTrigger) == 13 &&
              static_cast<int>(DumpEventType::kOomTopAlloc) == 14 &&
              static_cast<int>(DumpEventType::kPta) == 15);

// The events the memscope_dump view spells (any other code reads 'N/A'), and the types.
inline constexpr DumpEvent kCompactEvents[] = {
    DumpEvent::kMalloc,       DumpEvent::kFree,      DumpEvent::kSystem,
    DumpEvent::kSnapshot,     DumpEvent::kMstx,      DumpEvent::kOpLaunch,
    DumpEvent::kKernelLaunch, DumpEvent::kOomDetail, DumpEvent::kFreeCompleted};
inline constexpr DumpEventType kCompactEventTypes[] = {
    DumpEventType::kHost,         DumpEventType::kStartTrace, DumpEventType::kStopTrace,
    DumpEventType::kSnapshot,     DumpEventType::kStep,       DumpEventType::kMark,
    DumpEventType::kRangeStart,   DumpEventType::kRangeEnd,   DumpEventType::kAtenStart,
    DumpEventType::kAtenEnd,      DumpEventType::kHal,        DumpEventType::kHostPinned,
    DumpEventType::kKernelLaunch, DumpEventType::kOomTrigger, DumpEventType::kOomTopAlloc,
    DumpEventType::kPta};

// Whether memtap_event.detail holds device + 1 (0: a row about no device): every row but
// HOST blocks, SYSTEM STEP and (host) SNAPSHOT, whose detail says something else. A device
// pool's SNAPSHOT has Event Type PTA: its detail is its device's.
constexpr bool detail_holds_device(DumpEventType type) {
  return type != DumpEventType::kHost && type != DumpEventType::kStep &&
         type != DumpEventType::kSnapshot;
}

// The columns of memtap_event whose meaning depends on the row, and its memtap_event_stream
// row. What goes where:
//   ptr            MALLOC/FREE/OOM_TOP_ALLOC/FREE_COMPLETED: the block's address;
//                  KERNEL_LAUNCH and OOM_TRIGGER: the stream; a device's START_TRACE: its
//                  total bytes; a device pool's SNAPSHOT: reserved
//   size_bytes     MALLOC/FREE/OOM_TOP_ALLOC/FREE_COMPLETED: the block's size; SNAPSHOT:
//                  app_reserved; OOM_TRIGGER: the bytes asked for; a device's START_TRACE:
//                  its free bytes; a device pool's SNAPSHOT: allocated
//   allocation_id  MALLOC/FREE/OOM_TOP_ALLOC
//   owner          MALLOC/FREE/OOM_TOP_ALLOC
//   detail         HOST MALLOC/FREE: bit 0 is_mmap, the rest inherited_from_pid; SYSTEM
//                  STEP: step; host SNAPSHOT: total_bytes; any other row: device + 1 (0: none)
//   stream         HAL, HOST_PINNED and PTA MALLOC/FREE with has_stream
//                  (dump_block_has_stream): a memtap_event_stream row
//   pool           PTA MALLOC/FREE (dump_row_is_pool_block), and a device pool's SNAPSHOT
//                  with has_pool_peaks (used: size_bytes, total: total_bytes): a
//                  memtap_event_pool row
// Unused columns are 0 (no data byte in SQLite's record). Values above 2^63 keep their bits.
struct CompactColumns {
  int64_t ptr = 0;
  int64_t size_bytes = 0;
  int64_t allocation_id = 0;
  int64_t owner = 0;
  int64_t detail = 0;
  bool has_stream_row = false;
  int64_t stream = 0;
  bool has_pool_row = false;
  int64_t pool_used = -1;   // -1: NULL (not known)
  int64_t pool_total = -1;  // -1: NULL
  bool free_pending = false;
};
CompactColumns pack_columns(const DumpRow& row);
// The inverse, into a row whose event and event_type are set.
void unpack_columns(const CompactColumns& columns, DumpRow* row);

// CREATE TABLE for the compact tables, with the memtap_format row (timestamp_base_ns 0
// until the first row sets it), and CREATE VIEW memscope_dump: msMemScope's column
// names in its order, each value spelled as memscope_format.h spells it.
std::string compact_schema_sql();

// Columns of the memscope_dump view as SQL over `memtap_event AS e` (and the small tables),
// spelled as memscope_format.h spells the text rows: the view is made of these, and the
// window's event table filters and sorts compact recordings with them (event_pages.cpp).
std::string compact_event_sql();
std::string compact_event_type_sql();
std::string compact_name_sql();
std::string compact_device_id_sql();
std::string compact_ptr_sql();
std::string compact_attr_sql();
// True for rows whose Attr holds a block's members and whose Ptr its address
// (dump_row_has_block).
std::string compact_block_sql();
// True for rows whose Ptr is an address: those, and FREE_COMPLETED.
std::string compact_has_ptr_sql();

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
inline constexpr const char* kInsertEventStreamSql =
    "INSERT INTO memtap_event_stream VALUES (?1, ?2)";
inline constexpr const char* kInsertEventPoolSql =
    "INSERT INTO memtap_event_pool VALUES (?1, ?2, ?3, ?4)";

}  // namespace memtap
