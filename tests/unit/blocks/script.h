// Builds MemEvent sequences for the block analyses' tests: one call per event, strings
// interned on the way, and a time sort at the end so a test can write each block's story
// in one place.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "monitor/engine/blocks/block_analyzer.h"
#include "monitor/model/mem_event.h"

namespace memtap::blocks::test {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

// A block's strings, in the order tests usually give them: {owner, Python stack, name}.
struct Labels {
  Labels(std::string_view owner = {}, std::string_view stack_python = {},
         std::string_view name = {}, std::string_view stack_c = {})
      : owner(owner), stack_python(stack_python), name(name), stack_c(stack_c) {}
  std::string_view owner;
  std::string_view stack_python;
  std::string_view name;
  std::string_view stack_c;
};

class Script {
 public:
  uint32_t pid = 100;
  uint32_t tid = 1;
  int32_t device = kHostDevice;
  Layer layer = Layer::kHost;

  StringTable strings;
  std::vector<MemEvent> events;

  MemEvent& malloc(int64_t ts, uint64_t addr, uint64_t size, Labels l = {}) {
    MemEvent& e = add(ts, MemEventKind::kMalloc);
    e.addr = addr;
    e.size_bytes = size;
    e.allocation_id = ++last_id_;
    e.owner = strings.intern(l.owner);
    e.stack_python = strings.intern(l.stack_python);
    e.stack_c = strings.intern(l.stack_c);
    e.name = strings.intern(l.name);
    return e;
  }
  MemEvent& mmap(int64_t ts, uint64_t addr, uint64_t size) {
    MemEvent& e = malloc(ts, addr, size);
    e.is_mmap = true;
    return e;
  }
  MemEvent& free(int64_t ts, uint64_t addr) {
    MemEvent& e = add(ts, MemEventKind::kFree);
    e.addr = addr;
    return e;
  }
  // A PTA block's free that waits for another stream, and the pool taking it back.
  MemEvent& free_pending(int64_t ts, uint64_t addr) {
    MemEvent& e = free(ts, addr);
    e.free_pending = true;
    return e;
  }
  MemEvent& free_completed(int64_t ts, uint64_t addr) {
    MemEvent& e = add(ts, MemEventKind::kFreeCompleted);
    e.addr = addr;
    return e;
  }
  // A device pool's figures (memtap_pool_state, torch.cuda.memory_stats()).
  MemEvent& pool_snapshot(int64_t ts, int64_t allocated, int64_t reserved) {
    MemEvent& e = add(ts, MemEventKind::kSnapshot);
    e.layer = Layer::kPta;
    e.snap_allocated = allocated;
    e.snap_reserved = reserved;
    return e;
  }
  MemEvent& munmap(int64_t ts, uint64_t addr) {
    MemEvent& e = free(ts, addr);
    e.is_mmap = true;
    return e;
  }
  MemEvent& access(int64_t ts, uint64_t addr) {
    MemEvent& e = add(ts, MemEventKind::kAccess);
    e.addr = addr;
    return e;
  }
  MemEvent& named(int64_t ts, MemEventKind kind, std::string_view name) {
    MemEvent& e = add(ts, kind);
    e.name = strings.intern(name);
    return e;
  }
  MemEvent& op_start(int64_t ts, std::string_view name) {
    return named(ts, MemEventKind::kOpStart, name);
  }
  MemEvent& op_end(int64_t ts, std::string_view name) {
    return named(ts, MemEventKind::kOpEnd, name);
  }
  MemEvent& range_start(int64_t ts, std::string_view name) {
    return named(ts, MemEventKind::kRangeStart, name);
  }
  MemEvent& range_end(int64_t ts, std::string_view name) {
    return named(ts, MemEventKind::kRangeEnd, name);
  }
  MemEvent& step(int64_t ts) {
    MemEvent& e = add(ts, MemEventKind::kStep);
    e.device = kNoDevice;
    return e;
  }

  // Time order, keeping the written order of equal times.
  void sort() {
    std::stable_sort(events.begin(), events.end(),
                     [](const MemEvent& a, const MemEvent& b) { return a.ts_ns < b.ts_ns; });
  }

  void feed(BlockAnalyzer& a) {
    sort();
    a.add(events.data(), events.size());
  }

 private:
  MemEvent& add(int64_t ts, MemEventKind kind) {
    events.emplace_back();
    MemEvent& e = events.back();
    e.ts_ns = ts;
    e.pid = pid;
    e.tid = tid;
    e.device = device;
    e.kind = kind;
    e.layer = layer;
    return e;
  }

  uint64_t last_id_ = 0;
};

}  // namespace memtap::blocks::test
