// The curves `memtap report` and the window show (Allocated, Reserved, Active; what each is
// made of: engine/timeline/curve_rules.h), per process and device, as they stand after each
// event: what the profiler's CSVs call a device's totals at a moment (Total Allocated, Total
// Reserved, Total Active). An export feeds every event, in time order, and asks after each.
#pragma once

#include <cstdint>

#include "monitor/engine/timeline/timeline.h"
#include "monitor/model/mem_event.h"

namespace memtap {

struct CurvesNow {
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t active = 0;
};

class DeviceCurves {
 public:
  void add(const MemEvent& event) { timeline_.add(&event, 1); }
  // The curves of `pid` on `device` (< 0: the host) after the events added so far; zeros
  // before the first memory event there.
  CurvesNow now(uint32_t pid, int32_t device) const;

 private:
  int64_t value(uint32_t pid, int32_t device, timeline::Curve curve) const;
  timeline::Timeline timeline_;
};

}  // namespace memtap
