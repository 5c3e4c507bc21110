// A device's pool samples by component, for the curves (timeline) and the fragmentation
// (blocks), which must add them up alike.
//
// A pool SNAPSHOT (curve_rules.h) gives the figures of one pool, named by the row's Name:
// memtap's own samples and msMemScope's all come from one (PTA), but a torch_npu
// memory_record.csv has a row per component, PTA (the caching allocator) and GE (the graph
// engine's memory), each with its own times. The framework's figures are the sum of each
// component's newest (Insight's "PTA+GE"; the file's own PTA+GE rows come only when PTA's
// figures change, so they are not pool samples: the reader leaves them as other rows).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "monitor/engine/saturating.h"
#include "monitor/model/mem_event.h"

namespace memtap {

class PoolSamples {
 public:
  // Takes `e` as its component's newest figures and gives the sums over the components,
  // each kUnknown while no component has said it.
  void add(const MemEvent& e, int64_t* allocated, int64_t* reserved) {
    Part* part = nullptr;
    for (Part& p : parts_) {
      if (p.name == e.name) part = &p;
    }
    if (part == nullptr) part = &parts_.emplace_back(Part{e.name, kUnknown, kUnknown});
    if (e.snap_allocated >= 0) part->allocated = e.snap_allocated;
    if (e.snap_reserved >= 0) part->reserved = e.snap_reserved;
    *allocated = *reserved = kUnknown;
    for (const Part& p : parts_) {
      if (p.allocated >= 0)
        *allocated = saturating_add(std::max<int64_t>(*allocated, 0), p.allocated);
      if (p.reserved >= 0) *reserved = saturating_add(std::max<int64_t>(*reserved, 0), p.reserved);
    }
  }

 private:
  struct Part {
    uint32_t name;  // the row's Name (its string id)
    int64_t allocated;
    int64_t reserved;
  };
  std::vector<Part> parts_;  // one in every recording but torch_npu's profiler files: two
};

}  // namespace memtap
