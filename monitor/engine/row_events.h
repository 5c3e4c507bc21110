// The live path into the analyses: the Session's rows as MemEvents, the same events a
// reader makes of the recording those rows become, so that a replayed recording and the
// live run that wrote it give the same report.
#pragma once

#include <cstddef>
#include <vector>

#include "monitor/engine/dump_row.h"
#include "monitor/model/mem_event.h"

namespace memtap {

MemEvent event_from_row(const DumpRow& row);

// Appends one MemEvent per row.
void append_events(const DumpRow* rows, size_t count, std::vector<MemEvent>* out);

}  // namespace memtap
