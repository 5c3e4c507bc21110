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
// The values are on disk (compact_schema.h, row_spool.cpp): new ones go at the end.
enum class DumpEvent : uint8_t {
  kMalloc,
  kFree,
  kSystem,
  kSnapshot,
  kMstx,
  kOpLaunch,
  kTraceSlice,
  kKernelLaunch,   // KERNEL_LAUNCH; Name: the kernel
  kOomDetail,      // OOM_DETAIL: an allocation that failed, then the largest blocks live then
  kFreeCompleted,  // FREE_COMPLETED (Event Type PTA): a pending FREE's block went back to the pool
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
  kHal,         // MALLOC/FREE of device memory from the CUDA runtime or driver
  kHostPinned,  // MALLOC/FREE of page-locked host memory
  kKernelLaunch,
  kOomTrigger,   // OOM_DETAIL: the allocation that failed; Name: the API
  kOomTopAlloc,  // OOM_DETAIL: one of the largest blocks live on its device at the OOM
  kPta,          // the framework's caching pool: MALLOC/FREE/FREE_COMPLETED of its blocks, and
                 // SNAPSHOT of its figures on a device
};

// DumpRow::device of a row about no device: its `Device Id` follows its event (`cpu` for
// host memory, `N/A` otherwise).
inline constexpr int32_t kDumpNoDevice = -1;

struct DumpRow {
  DumpEvent event = DumpEvent::kSystem;
  DumpEventType event_type = DumpEventType::kHost;
  bool is_mmap = false;            // Attr "kind":"mmap" (anonymous mapping, not heap)
  bool has_stream = false;         // MALLOC/FREE: Attr stream (`stream`) was given; KERNEL_LAUNCH
                                   // and OOM_TRIGGER rows always write theirs
  int32_t device = kDumpNoDevice;  // `Device Id` of HAL blocks, kernels, OOM rows and a
                                   // device's START_TRACE: the CUDA ordinal
  int64_t timestamp_ns = 0;        // nanoseconds since the Unix epoch; a trace slice's start
  uint32_t process_id = 0;
  uint32_t thread_id = 0;
  uint64_t ptr = 0;                 // MALLOC/FREE and OOM_TOP_ALLOC: the block's address
  uint64_t size_bytes = 0;          // MALLOC/FREE/OOM_TOP_ALLOC: the block's size (FREE: the paired
                                    // block's); SNAPSHOT: the process's resident set (App
                                    // Reserved); OOM_TRIGGER: the bytes asked for; a device's
                                    // START_TRACE: its free bytes; a device pool's SNAPSHOT
                                    // with has_pool_peaks: Attr max_allocated
  uint64_t total_bytes = 0;         // SNAPSHOT: the memory the process may have; 0 unknown; a
                                    // device's START_TRACE: its capacity; a device pool's
                                    // SNAPSHOT with has_pool_peaks: Attr max_reserved
  uint64_t allocation_id = 0;       // MALLOC/FREE/OOM_TOP_ALLOC; 0 on a FREE that matched no block
  uint32_t inherited_from_pid = 0;  // FREE of a block this fork() child inherited from its parent
  // Session string ids (0: none, written as the column's empty value).
  uint32_t name = 0;            // `Name`: MALLOC: the innermost open operator (a device or
                                // pinned block without one: the API that allocated it); MSTX:
                                // the text; OP_LAUNCH: the operator; KERNEL_LAUNCH: the kernel;
                                // OOM_TRIGGER: the API; OOM_TOP_ALLOC: its MALLOC's; trace
                                // slice: its FuncInfo
  uint32_t owner = 0;           // Attr owner (MALLOC, FREE, OOM_TOP_ALLOC): levels joined by '@'
  uint32_t stack_python = 0;    // `Call Stack(Python)` (MALLOC, OOM_TRIGGER, OOM_TOP_ALLOC)
  uint32_t stack_c = 0;         // `Call Stack(C)` (the same rows)
  bool free_pending = false;    // PTA FREE: Attr pending "1" (a FREE_COMPLETED row follows later);
                                // here, in what was padding, the row stays 120 bytes
  bool has_pool_peaks = false;  // SNAPSHOT of a device's pool: the pool's own peaks came with
                                // it (size_bytes, total_bytes; also in what was padding)
  uint64_t step = 0;            // SYSTEM STEP: the step's number (1, 2, ...), written as `Name`
  int64_t end_ns = 0;           // trace slice: its end, epoch ns
  uint64_t stream = 0;          // Attr stream: see has_stream
  // PTA MALLOC/FREE: the pool after the event, Attr used (bytes in the device's live PTA
  // blocks) and total (the reserved bytes of its latest pool state; -1: none reported yet).
  // SNAPSHOT of a device's pool (Event Type PTA): Attr allocated and reserved.
  int64_t pool_used = -1;
  int64_t pool_total = -1;
};
// Rows queue by the million (analysis and writer queues, 1M rows each): every byte counts.
static_assert(sizeof(DumpRow) == 120,
              "free_pending and has_pool_peaks sit in the padding after stack_c");

}  // namespace memtap
