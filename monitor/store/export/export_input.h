// An export's input: any file the reader takes, streamed in time order in batches (a large
// database in bounded memory), only the process --pid names when it names one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "monitor/store/reader/recording_reader.h"

namespace memtap {

// Events per batch handed to an exporter.
inline constexpr size_t kExportBatchEvents = 1 << 16;

// stream_recording of `path`, or stream_recording_range of `pid`'s events when given (then
// false with *error when the file has none).
// `progress` as in stream_recording (not counted for one pid's events).
bool stream_export_input(const std::string& path, std::optional<uint32_t> pid, Recording* out,
                         const EventBatchFn& on_batch, std::string* error,
                         ReadProgress* progress = nullptr);

// For the formats with no process column: the processes with memory events (MALLOC, FREE,
// SNAPSHOT) seen so far, and the error for more than one. A format that counts other events
// as memory (torch-snapshot: a device's blocks and OOMs) notes their processes itself.
class OneProcess {
 public:
  void note(const MemEvent& event);
  void note_pid(uint32_t pid) { pids_.insert(pid); }
  // The one process noted, if exactly one was.
  std::optional<uint32_t> pid() const {
    return pids_.size() == 1 ? std::optional<uint32_t>(*pids_.begin()) : std::nullopt;
  }
  // True with one process or none; else false with *error: "<path>: operator-memory holds
  // one process's memory and this recording has memory of 2 processes (pids 10, 11): choose
  // one with --pid".
  bool check(const std::string& path, const char* format, std::string* error) const;

 private:
  std::set<uint32_t> pids_;
};

}  // namespace memtap
