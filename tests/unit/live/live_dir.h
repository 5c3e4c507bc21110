// A live recording in a temporary directory of its own, for the tests of the receiving loop
// (tests/unit/live): the directory goes when the test ends, whether it passed or not.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "monitor/live/live_recording.h"

namespace memtap {

class LiveDir {
 public:
  LiveDir() {
    char path[] = "/tmp/memtap_live_XXXXXX";
    if (mkdtemp(path)) path_ = path;
  }
  ~LiveDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  LiveDir(const LiveDir&) = delete;
  LiveDir& operator=(const LiveDir&) = delete;

  bool ok() const { return !path_.empty(); }
  std::string endpoint() const { return "ipc://" + path_ + "/live.sock"; }
  // A live recording listening on endpoint(), into a file here; null with `error` said. To
  // be declared after the LiveDir, so that it closes before the directory goes.
  std::unique_ptr<LiveRecording> start(std::string* error, const SessionLimits& limits = {}) const {
    return LiveRecording::start(endpoint(), path_ + "/live.db", {}, error, {}, {}, limits);
  }

 private:
  std::string path_;
};

// The process `pid` among `processes`, or null.
inline const ProcessInfo* find_process(const std::vector<ProcessInfo>& processes, uint32_t pid) {
  for (const ProcessInfo& p : processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

}  // namespace memtap
