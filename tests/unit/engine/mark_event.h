// The step, mark and range events the engine's step and range tests feed (StepMarks,
// RangeLanes): a kind, a process, a time and the name's string id.
#pragma once

#include <cstdint>

#include "monitor/model/mem_event.h"

namespace memtap::test {

inline MemEvent mark_event(MemEventKind kind, uint32_t pid, int64_t ts_ns, uint32_t name = 0) {
  MemEvent e;
  e.kind = kind;
  e.pid = pid;
  e.ts_ns = ts_ns;
  e.name = name;
  return e;
}

}  // namespace memtap::test
