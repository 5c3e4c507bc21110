// FREE rows completed from their MALLOCs (see free_matcher.h).
#include "monitor/store/reader/free_matcher.h"

#include <algorithm>

namespace memtap::reader {

size_t FreeMatcher::KeyHash::operator()(const BlockKey& key) const {
  // Addresses are aligned, so their low bits say little: mix before combining.
  uint64_t h = key.addr * 0x9e3779b97f4a7c15ull;
  h ^= (uint64_t(key.pid) << 32 | uint32_t(key.device)) + 0x632be59bd9b4e019ull + (h << 6) +
       (h >> 2);
  h ^= uint64_t(key.layer) * 0xff51afd7ed558ccdull;
  return static_cast<size_t>(h ^ (h >> 29));
}

void FreeMatcher::observe(MemEvent* event) {
  if (event->kind == MemEventKind::kMalloc) {
    live_[{event->addr, event->pid, event->device, event->layer}] = {event->size_bytes,
                                                                     event->allocation_id};
    if (std::find(devices_.begin(), devices_.end(), event->device) == devices_.end()) {
      devices_.push_back(event->device);
    }
  } else if (event->kind == MemEventKind::kFree) {
    complete_free(event);
  }
}

void FreeMatcher::complete_free(MemEvent* event) {
  BlockKey key{event->addr, event->pid, event->device, event->layer};
  auto it = live_.end();
  if (event->device != kNoDevice) {
    it = live_.find(key);
  } else {
    for (int32_t device : devices_) {
      key.device = device;
      it = live_.find(key);
      if (it != live_.end()) break;
    }
  }
  if (it == live_.end()) return;  // freed but never seen allocated: left as the file has it
  if (event->size_bytes == 0) event->size_bytes = it->second.size_bytes;
  if (event->allocation_id == 0) event->allocation_id = it->second.allocation_id;
  event->device = it->first.device;
  live_.erase(it);
}

void complete_frees(std::vector<MemEvent>* events) {
  FreeMatcher matcher;
  for (MemEvent& event : *events) matcher.observe(&event);
}

}  // namespace memtap::reader
