// One row of the msMemScope `memscope_dump` table, before it is formatted as text, or one
// Python tracer slice (table `python_trace_{pid}`).
//
// The engine produces these in timestamp order; the store formats and writes them. Keeping
// the row numeric until the store means the engine never builds strings per event: text
// (names, owners, stacks) is a session string id, and the session hands each string to
// its consumers once, before the first row that uses it (session.h, StringSink).
#pragma once

#include <cstdint>

namespace memtap {

// The `Event` column. kTraceSlice is no memscope_dump row: it goes to python_trace_{pid}.
enum class DumpEvent : uint8_t {
  kMalloc,
  kFree,
  kSystem,
  kSnapshot,
  kMstx,
  kOpLaunch,
  kTraceSlice,
};

// The `Event Type` column.
enum class DumpEventType : uint8_t {
  kHost,
  kStartTrace,
  kStopTrace,
  kSnapshot,
  kStep,        // SYSTEM STEP; Name: the step's number
  kMark,        // MSTX Mark; Name: the text
  kRangeStart,  // MSTX Range_start; Name: the range
  kRangeEnd,    // MSTX Range_end
  kAtenStart,   // OP_LAUNCH ATEN_START; Name: the operator
  kAtenEnd,     // OP_LAUNCH ATEN_END
};

struct DumpRow {
  DumpEvent event = DumpEvent::kSystem;
  DumpEventType event_type = DumpEventType::kHost;
  bool is_mmap = false;      // Attr "kind":"mmap" (anonymous mapping, not heap)
  int64_t timestamp_ns = 0;  // nanoseconds since the Unix epoch; a trace slice's start
  uint32_t process_id = 0;
  uint32_t thread_id = 0;
  uint64_t ptr = 0;                 // MALLOC/FREE only
  uint64_t size_bytes = 0;          // MALLOC/FREE: the block's size (FREE: the paired block's);
                                    // SNAPSHOT: the process's resident set (App Reserved)
  uint64_t total_bytes = 0;         // SNAPSHOT: the memory the process may have; 0 unknown
  uint64_t allocation_id = 0;       // MALLOC/FREE only; 0 on a FREE that matched no block
  uint32_t inherited_from_pid = 0;  // FREE of a block this fork() child inherited from its parent
  // Session string ids (0: none, written as the column's empty value).
  uint32_t name = 0;          // `Name`: MALLOC: the innermost open operator; MSTX: the text;
                              // OP_LAUNCH: the operator; trace slice: its FuncInfo
  uint32_t owner = 0;         // Attr owner (MALLOC and FREE): levels joined by '@'
  uint32_t stack_python = 0;  // `Call Stack(Python)` (MALLOC only)
  uint32_t stack_c = 0;       // `Call Stack(C)` (MALLOC only)
  uint64_t step = 0;          // SYSTEM STEP: the step's number (1, 2, ...), written as `Name`
  int64_t end_ns = 0;         // trace slice: its end, epoch ns
};

}  // namespace memtap
