// See event_dump_row.h. Case by case the mirror of event_from_row (row_events.cpp).
#include "monitor/store/export/event_dump_row.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace memtap {
namespace {

std::optional<DumpEventType> block_type(Layer layer) {
  switch (layer) {
    case Layer::kHost:
      return DumpEventType::kHost;
    case Layer::kHostPinned:
      return DumpEventType::kHostPinned;
    case Layer::kHal:
      return DumpEventType::kHal;
    case Layer::kPta:
      return DumpEventType::kPta;
    case Layer::kPtaWorkspace:
    case Layer::kAtb:
    case Layer::kMindspore:
    case Layer::kOther:
      break;
  }
  return std::nullopt;
}

// A figure the writer prints as an unsigned number: an unknown one (-1) as 0.
uint64_t known_or_zero(int64_t value) {
  return uint64_t(std::max<int64_t>(value, 0));
}

// The step's number from its Name ("3"); 0 when the file named it otherwise.
uint64_t step_number(const std::string& name) {
  uint64_t step = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), step);
  return ec == std::errc() && end == name.data() + name.size() ? step : 0;
}

}  // namespace

bool dump_row_from_event(const MemEvent& e, const StringTable& strings, DumpRow* row) {
  *row = DumpRow{};
  row->timestamp_ns = e.ts_ns;
  row->process_id = e.pid;
  row->thread_id = e.tid;
  row->device = e.device >= 0 ? e.device : kDumpNoDevice;
  row->name = e.name;
  row->stack_python = e.stack_python;
  row->stack_c = e.stack_c;
  switch (e.kind) {
    case MemEventKind::kMalloc:
    case MemEventKind::kFree: {
      const std::optional<DumpEventType> type = block_type(e.layer);
      if (!type) return false;
      row->event = e.kind == MemEventKind::kMalloc ? DumpEvent::kMalloc : DumpEvent::kFree;
      row->event_type = *type;
      row->is_mmap = e.is_mmap;
      row->ptr = e.addr;
      row->size_bytes = e.size_bytes;
      row->allocation_id = e.allocation_id;
      row->owner = e.owner;
      row->has_stream = e.stream != 0;
      row->stream = e.stream;
      if (*type == DumpEventType::kPta) {
        row->pool_used = e.pool_used;
        row->pool_total = e.pool_total;
        row->free_pending = e.kind == MemEventKind::kFree && e.free_pending;
      }
      return true;
    }
    case MemEventKind::kFreeCompleted:
      if (e.layer != Layer::kPta) return false;
      row->event = DumpEvent::kFreeCompleted;
      row->event_type = DumpEventType::kPta;
      row->ptr = e.addr;
      row->size_bytes = e.size_bytes;
      return true;
    case MemEventKind::kKernelLaunch:
      row->event = DumpEvent::kKernelLaunch;
      row->event_type = DumpEventType::kKernelLaunch;
      row->has_stream = true;
      row->stream = e.stream;
      return true;
    case MemEventKind::kOom:
    case MemEventKind::kOomTopAlloc:
      row->event = DumpEvent::kOomDetail;
      row->size_bytes = e.size_bytes;
      if (e.kind == MemEventKind::kOom) {
        row->event_type = DumpEventType::kOomTrigger;
        row->has_stream = true;
        row->stream = e.stream;
      } else {
        row->event_type = DumpEventType::kOomTopAlloc;
        row->ptr = e.addr;
        row->allocation_id = e.allocation_id;
        row->owner = e.owner;
      }
      return true;
    case MemEventKind::kSnapshot:
      row->event = DumpEvent::kSnapshot;
      if (e.layer == Layer::kPta && e.device >= 0) {  // a device's pool: allocated, reserved
        row->event_type = DumpEventType::kPta;
        row->pool_used = e.snap_allocated;
        row->pool_total = e.snap_reserved;
        if (e.snap_max_allocated >= 0 && e.snap_max_reserved >= 0) {
          row->has_pool_peaks = true;
          row->size_bytes = uint64_t(e.snap_max_allocated);
          row->total_bytes = uint64_t(e.snap_max_reserved);
        }
        return true;
      }
      if (e.device >= 0) return false;  // only the host's samples are rows of memtap's
      row->event_type = DumpEventType::kSnapshot;
      row->size_bytes = known_or_zero(e.snap_app_reserved);
      row->total_bytes = known_or_zero(e.snap_total);
      return true;
    case MemEventKind::kTraceStart:
      row->event = DumpEvent::kSystem;
      row->event_type = DumpEventType::kStartTrace;
      if (e.device >= 0) {  // the device's memory as the agent first saw it
        row->size_bytes = known_or_zero(e.snap_free);
        row->total_bytes = known_or_zero(e.snap_total);
      }
      return true;
    case MemEventKind::kTraceStop:
      row->event = DumpEvent::kSystem;
      row->event_type = DumpEventType::kStopTrace;
      return true;
    case MemEventKind::kStep:
      row->event = DumpEvent::kSystem;
      row->event_type = DumpEventType::kStep;
      row->step = step_number(strings.get(e.name));
      return true;
    case MemEventKind::kMark:
    case MemEventKind::kRangeStart:
    case MemEventKind::kRangeEnd:
      row->event = DumpEvent::kMstx;
      row->event_type = e.kind == MemEventKind::kMark         ? DumpEventType::kMark
                        : e.kind == MemEventKind::kRangeStart ? DumpEventType::kRangeStart
                                                              : DumpEventType::kRangeEnd;
      return true;
    case MemEventKind::kOpStart:
    case MemEventKind::kOpEnd:
      row->event = DumpEvent::kOpLaunch;
      row->event_type =
          e.kind == MemEventKind::kOpStart ? DumpEventType::kAtenStart : DumpEventType::kAtenEnd;
      return true;
    case MemEventKind::kAccess:
    case MemEventKind::kOther:
      break;
  }
  return false;
}

}  // namespace memtap
