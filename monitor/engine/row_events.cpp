// See row_events.h. Mirrors what monitor/store/memscope_format writes for each row, so the
// reader's view of the file and this view of the rows agree field by field.
#include "monitor/engine/row_events.h"

namespace memtap {

MemEvent event_from_row(const DumpRow& row) {
  MemEvent e;
  e.ts_ns = row.timestamp_ns;
  e.pid = row.process_id;
  e.tid = row.thread_id;
  switch (row.event) {
    case DumpEvent::kMalloc:
    case DumpEvent::kFree:
      e.kind = row.event == DumpEvent::kMalloc ? MemEventKind::kMalloc : MemEventKind::kFree;
      e.device = kHostDevice;
      e.layer = Layer::kHost;
      e.is_mmap = row.is_mmap;
      e.addr = row.ptr;
      e.size_bytes = row.size_bytes;
      e.allocation_id = row.allocation_id;
      break;
    case DumpEvent::kSnapshot:
      e.kind = MemEventKind::kSnapshot;
      e.device = kHostDevice;
      e.snap_app_reserved = int64_t(row.size_bytes);
      if (row.total_bytes != 0) e.snap_total = int64_t(row.total_bytes);
      break;
    case DumpEvent::kSystem:
      e.kind = row.event_type == DumpEventType::kStopTrace ? MemEventKind::kTraceStop
                                                           : MemEventKind::kTraceStart;
      e.device = kNoDevice;
      break;
  }
  return e;
}

void append_events(const DumpRow* rows, size_t count, std::vector<MemEvent>* out) {
  out->reserve(out->size() + count);
  for (size_t i = 0; i < count; ++i) out->push_back(event_from_row(rows[i]));
}

}  // namespace memtap
