// See row_events.h. Mirrors what monitor/store/memscope_format writes for each row, so the
// reader's view of the file and this view of the rows agree field by field.
#include "monitor/engine/row_events.h"

#include <algorithm>
#include <charconv>

namespace memtap {

void RowStrings::add(uint32_t session_id, std::string_view text) {
  if (session_id >= ids_.size()) ids_.resize(size_t{session_id} + 1, 0);
  ids_[session_id] = table_->intern(text);
}

MemEvent event_from_row(const DumpRow& row, RowStrings& strings) {
  MemEvent e;
  e.ts_ns = row.timestamp_ns;
  e.pid = row.process_id;
  e.tid = row.thread_id;
  e.device = row.device >= 0 ? row.device : kNoDevice;
  e.name = strings.id(row.name);
  e.stack_python = strings.id(row.stack_python);
  e.stack_c = strings.id(row.stack_c);
  // KERNEL_LAUNCH and OOM_TRIGGER always write their stream; a block only when it has one.
  if (row.has_stream) e.stream = row.stream;
  // The reader gives rows of no block Layer::kOther.
  e.layer = Layer::kOther;
  switch (row.event) {
    case DumpEvent::kMalloc:
    case DumpEvent::kFree:
      e.kind = row.event == DumpEvent::kMalloc ? MemEventKind::kMalloc : MemEventKind::kFree;
      e.layer = row.event_type == DumpEventType::kHal          ? Layer::kHal
                : row.event_type == DumpEventType::kHostPinned ? Layer::kHostPinned
                : row.event_type == DumpEventType::kPta        ? Layer::kPta
                                                               : Layer::kHost;
      if (row.device < 0) e.device = kHostDevice;  // HOST and HOST_PINNED: `cpu`
      e.is_mmap = row.is_mmap;
      e.addr = row.ptr;
      e.size_bytes = row.size_bytes;
      e.allocation_id = row.allocation_id;
      e.owner = strings.id(row.owner);
      if (row.event_type == DumpEventType::kPta) {  // Attr used, total (when known), pending
        if (row.pool_used >= 0) e.pool_used = row.pool_used;
        if (row.pool_total >= 0) e.pool_total = row.pool_total;
        e.free_pending = row.event == DumpEvent::kFree && row.free_pending;
      }
      break;
    case DumpEvent::kFreeCompleted:
      e.kind = MemEventKind::kFreeCompleted;
      e.layer = Layer::kPta;
      e.addr = row.ptr;
      e.size_bytes = row.size_bytes;
      break;
    case DumpEvent::kKernelLaunch:
      e.kind = MemEventKind::kKernelLaunch;
      break;
    case DumpEvent::kOomDetail:
      if (row.event_type == DumpEventType::kOomTopAlloc) {
        e.kind = MemEventKind::kOomTopAlloc;
        e.addr = row.ptr;
        e.allocation_id = row.allocation_id;
        e.owner = strings.id(row.owner);
      } else {
        e.kind = MemEventKind::kOom;
      }
      e.size_bytes = row.size_bytes;  // the block's, or the bytes the failed call asked for
      break;
    case DumpEvent::kSnapshot:
      e.kind = MemEventKind::kSnapshot;
      if (row.event_type == DumpEventType::kPta) {  // a device's pool: allocated, reserved
        e.layer = Layer::kPta;
        // Written as 0 when not known (memscope_format.h): never, from the session.
        e.snap_allocated = std::max<int64_t>(row.pool_used, 0);
        e.snap_reserved = std::max<int64_t>(row.pool_total, 0);
        if (row.has_pool_peaks) {  // below 2^63: decode checked them
          e.snap_max_allocated = int64_t(row.size_bytes);
          e.snap_max_reserved = int64_t(row.total_bytes);
        }
        break;
      }
      e.device = kHostDevice;
      e.snap_app_reserved = int64_t(row.size_bytes);
      if (row.total_bytes != 0) e.snap_total = int64_t(row.total_bytes);
      break;
    case DumpEvent::kSystem:
      switch (row.event_type) {
        case DumpEventType::kStopTrace:
          e.kind = MemEventKind::kTraceStop;
          break;
        case DumpEventType::kStep: {
          // The file's Name is the number: the reader interns its text. Once per step.
          e.kind = MemEventKind::kStep;
          char digits[24];
          const auto end = std::to_chars(digits, digits + sizeof digits, row.step).ptr;
          e.name = strings.table().intern(std::string_view(digits, size_t(end - digits)));
          break;
        }
        default:
          e.kind = MemEventKind::kTraceStart;
          if (row.device >= 0) {  // a device's capacity, as the agent first saw it
            e.snap_free = int64_t(row.size_bytes);
            e.snap_total = int64_t(row.total_bytes);
          }
          break;
      }
      break;
    case DumpEvent::kMstx:
      e.kind = row.event_type == DumpEventType::kRangeStart ? MemEventKind::kRangeStart
               : row.event_type == DumpEventType::kRangeEnd ? MemEventKind::kRangeEnd
                                                            : MemEventKind::kMark;
      break;
    case DumpEvent::kOpLaunch:
      e.kind =
          row.event_type == DumpEventType::kAtenEnd ? MemEventKind::kOpEnd : MemEventKind::kOpStart;
      break;
    case DumpEvent::kTraceSlice:
      e.kind = MemEventKind::kOther;
      break;
  }
  return e;
}

void append_events(const DumpRow* rows, size_t count, RowStrings& strings,
                   std::vector<MemEvent>* out) {
  out->reserve(out->size() + count);
  for (size_t i = 0; i < count; ++i) {
    if (rows[i].event == DumpEvent::kTraceSlice) continue;
    out->push_back(event_from_row(rows[i], strings));
  }
}

}  // namespace memtap
