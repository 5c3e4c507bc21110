// Reading the string log; see string_drain.h and agent/string_log.h.
#include "agent/sender/string_drain.h"

#include <algorithm>

namespace memtap {

namespace {

// Bounds what an interning thread that stalls (or vanished: a thread killed mid-intern)
// can make the sender remember. Past it the cursor waits for the oldest id instead.
constexpr size_t kMaxWaiting = 4096;

// Takes the text of id when it is published: true, and out/bytes updated; false when not.
bool take(const StringLogMap* m, uint32_t id, std::vector<StringText>* out, size_t* bytes) {
  uint64_t at = m->offsets[id].load(std::memory_order_acquire);
  if (at == 0) return false;
  if (at == kStringTombstone) return true;
  uint32_t length;
  const char* text = string_log_text(m, at, &length);
  out->push_back({id, text, length});
  *bytes += length;
  return true;
}

}  // namespace

bool read_new_strings(const StringLog* log, StringCursor* cursor, size_t max_bytes,
                      std::vector<StringText>* out) {
  const StringLogMap* m = log ? log->map.load(std::memory_order_acquire) : nullptr;
  if (!m) return true;
  size_t bytes = 0;
  auto& waiting = cursor->waiting;
  waiting.erase(std::remove_if(waiting.begin(), waiting.end(),
                               [&](uint32_t id) { return take(m, id, out, &bytes); }),
                waiting.end());
  uint32_t end = std::min(m->next_id.load(std::memory_order_acquire), m->max_ids);
  for (; cursor->next < end; ++cursor->next) {
    if (bytes >= max_bytes) return false;
    if (!take(m, cursor->next, out, &bytes)) {
      if (waiting.size() >= kMaxWaiting) return true;
      waiting.push_back(cursor->next);
    }
  }
  return true;
}

}  // namespace memtap
