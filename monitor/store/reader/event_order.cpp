// Putting events in time order (see event_order.h).
#include "monitor/store/reader/event_order.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace memtap::reader {

void sort_by_time(std::vector<MemEvent>* events) {
  std::vector<MemEvent>& e = *events;
  const auto by_time = [](const MemEvent& a, const MemEvent& b) { return a.ts_ns < b.ts_ns; };
  if (std::is_sorted(e.begin(), e.end(), by_time)) return;  // memtap's own files

  // The position breaks ties, so an unstable sort of unique keys is a stable sort.
  struct Key {
    int64_t ts_ns;
    size_t from;
    bool operator<(const Key& other) const {
      return ts_ns != other.ts_ns ? ts_ns < other.ts_ns : from < other.from;
    }
  };
  std::vector<Key> keys(e.size());
  for (size_t i = 0; i < e.size(); ++i) keys[i] = {e[i].ts_ns, i};
  std::sort(keys.begin(), keys.end());

  // Position i takes the event from keys[i].from. Follow each cycle of that permutation
  // with one event in hand; a done slot is marked by pointing at itself.
  for (size_t start = 0; start < e.size(); ++start) {
    if (keys[start].from == start) continue;
    MemEvent held = std::move(e[start]);
    size_t to = start;
    while (true) {
      const size_t from = keys[to].from;
      keys[to].from = to;
      if (from == start) {
        e[to] = std::move(held);
        break;
      }
      e[to] = std::move(e[from]);
      to = from;
    }
  }
}

}  // namespace memtap::reader
