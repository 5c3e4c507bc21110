// See export_input.h.
#include "monitor/store/export/export_input.h"

namespace memtap {

bool stream_export_input(const std::string& path, std::optional<uint32_t> pid, Recording* out,
                         const EventBatchFn& on_batch, std::string* error, ReadProgress* progress) {
  if (!pid) return stream_recording(path, kExportBatchEvents, out, on_batch, error, progress);
  RecordingFilter filter;
  filter.pid = *pid;
  uint64_t events = 0;
  const auto counted = [&](std::span<const MemEvent> batch) {
    events += batch.size();
    return on_batch(batch);
  };
  if (!stream_recording_range(path, filter, kExportBatchEvents, out, counted, error)) return false;
  if (events > 0) return true;
  *error = path + ": no events of process " + std::to_string(*pid) + " (--pid)";
  return false;
}

void OneProcess::note(const MemEvent& event) {
  if (event.kind == MemEventKind::kMalloc || event.kind == MemEventKind::kFree ||
      event.kind == MemEventKind::kSnapshot) {
    note_pid(event.pid);
  }
}

bool OneProcess::check(const std::string& path, const char* format, std::string* error) const {
  if (pids_.size() <= 1) return true;
  std::string pids;
  for (const uint32_t pid : pids_) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
  *error = path + ": " + format + " holds one process's memory and this recording has memory of " +
           std::to_string(pids_.size()) + " processes (pids " + pids + "): choose one with --pid";
  return false;
}

}  // namespace memtap
