// See memory_record_export.h.
#include "monitor/store/export/memory_record_export.h"

#include <map>
#include <memory>

#include "monitor/engine/timeline/curve_rules.h"
#include "monitor/store/export/device_curves.h"
#include "monitor/store/export/export_input.h"
#include "monitor/store/export/profiler_csv_text.h"
#include "monitor/store/export/text_file.h"

namespace memtap {

const char* const kMemoryRecordHeader =
    "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),"
    "Stream Ptr,Device Type";

namespace {

bool is_memory_event(const MemEvent& e) {
  return e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree ||
         e.kind == MemEventKind::kFreeCompleted || e.kind == MemEventKind::kSnapshot;
}

struct DeviceState {
  bool written = false;
  CurvesNow last;
  const char* framework = nullptr;  // the framework layer's name, once the device has one
};

}  // namespace

bool export_memory_record(const std::string& in, const std::string& partial,
                          const ExportOptions& options, ExportSummary* summary,
                          std::string* error) {
  std::unique_ptr<TextFile> file = TextFile::create(partial, error);
  if (file == nullptr) return false;
  file->write(kMemoryRecordHeader);
  file->write("\n");
  Recording rec;
  DeviceCurves curves;
  OneProcess one_process;
  std::map<int32_t, DeviceState> devices;
  std::string line;
  const bool read = stream_export_input(
      in, options.pid, &rec,
      [&](std::span<const MemEvent> batch) {
        for (const MemEvent& e : batch) {
          one_process.note(e);
          curves.add(e);
          if (!is_memory_event(e)) continue;
          const int32_t device = e.device < 0 ? kHostDevice : e.device;
          DeviceState& state = devices[device];
          const bool framework_block =
              (e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree) &&
              timeline::is_framework_slot(timeline::layer_slot(e.layer, e.is_mmap));
          if (state.framework == nullptr && (framework_block || timeline::is_pool_snapshot(e))) {
            state.framework = layer_name(e.layer);
          }
          const CurvesNow now = curves.now(e.pid, device);
          if (state.written && now.allocated == state.last.allocated &&
              now.reserved == state.last.reserved && now.active == state.last.active) {
            continue;
          }
          state.written = true;
          state.last = now;
          line = state.framework != nullptr ? state.framework : device < 0 ? "HOST" : "HAL";
          line += "," + us_cell(e.ts_ns);
          line += "," + mb_text(now.allocated);
          line += "," + mb_text(now.reserved);
          line += "," + mb_text(now.active);
          line += "," + stream_text(e.stream);
          line += "," + device_type_text(device);
          line += "\n";
          file->write(line);
          ++summary->rows;
        }
        return true;
      },
      error, options.progress);
  if (!read || !one_process.check(in, "memory-record", error)) return false;
  summary->unread_rows = rec.warning;
  return file->close(error);
}

}  // namespace memtap
