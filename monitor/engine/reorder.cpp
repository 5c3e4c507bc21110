// The run merge behind ReorderBuffer (see reorder.h).
#include "monitor/engine/reorder.h"

#include <algorithm>
#include <utility>

namespace memtap {
namespace {

// std::*_heap build a max-heap, so "greater" puts the oldest run on top.
bool later(const HeldRun& a, const HeldRun& b) {
  const int64_t ta = a.events[a.next].epoch_ns;
  const int64_t tb = b.events[b.next].epoch_ns;
  return ta != tb ? ta > tb : a.arrival > b.arrival;
}

// Restores the heap after the top run's oldest event changed: one pass down, instead of
// the pop_heap + push_heap pair (two passes) that the standard library would need.
void sift_top_down(std::vector<HeldRun>& heap) {
  const size_t n = heap.size();
  size_t i = 0;
  HeldRun moving = std::move(heap[0]);
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && later(heap[child], heap[child + 1])) ++child;
    if (!later(moving, heap[child])) break;
    heap[i] = std::move(heap[child]);
    i = child;
  }
  heap[i] = std::move(moving);
}

}  // namespace

void hold_run(ReorderBuffer& buffer, HeldRun run) {
  if (run.next >= run.events.size()) return;
  buffer.held_events += run.events.size() - run.next;
  run.arrival = buffer.arrivals++;
  buffer.heap.push_back(std::move(run));
  std::push_heap(buffer.heap.begin(), buffer.heap.end(), later);
}

const HeldRun& oldest_run(const ReorderBuffer& buffer) {
  return buffer.heap.front();
}

void drop_oldest(ReorderBuffer& buffer) {
  auto& heap = buffer.heap;
  --buffer.held_events;
  HeldRun& top = heap.front();
  if (++top.next < top.events.size()) {
    sift_top_down(heap);
    return;
  }
  std::pop_heap(heap.begin(), heap.end(), later);
  heap.pop_back();
}

}  // namespace memtap
