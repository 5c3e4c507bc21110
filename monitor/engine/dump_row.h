// One row of the msMemScope `memscope_dump` table, before it is formatted as text.
//
// The engine produces these in timestamp order; the store formats and writes them. Keeping
// the row numeric until the store means the engine never builds strings per event.
#pragma once

#include <cstdint>

namespace memtap {

// The `Event` column.
enum class DumpEvent : uint8_t { kMalloc, kFree, kSystem, kSnapshot };

// The `Event Type` column.
enum class DumpEventType : uint8_t { kHost, kStartTrace, kStopTrace, kSnapshot };

struct DumpRow {
  DumpEvent event = DumpEvent::kSystem;
  DumpEventType event_type = DumpEventType::kHost;
  bool is_mmap = false;      // Attr "kind":"mmap" (anonymous mapping, not heap)
  int64_t timestamp_ns = 0;  // nanoseconds since the Unix epoch
  uint32_t process_id = 0;
  uint32_t thread_id = 0;
  uint64_t ptr = 0;                 // MALLOC/FREE only
  uint64_t size_bytes = 0;          // MALLOC/FREE: the block's size (FREE: the paired block's);
                                    // SNAPSHOT: the process's resident set (App Reserved)
  uint64_t total_bytes = 0;         // SNAPSHOT: the memory the process may have; 0 unknown
  uint64_t allocation_id = 0;       // MALLOC/FREE only; 0 on a FREE that matched no block
  uint32_t inherited_from_pid = 0;  // FREE of a block this fork() child inherited from its parent
};

}  // namespace memtap
