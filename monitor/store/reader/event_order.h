// Putting events in time order, keeping file order among equal times.
//
// msMemScope writes a block's rows when the block is freed, so its files are only mostly
// in time order. Ten million events of ~128 bytes are too heavy to shuffle around in a
// comparison sort, so the sort runs over (time, position) keys and the events are then
// moved into place once, in place, cycle by cycle: no second copy of the events.
#pragma once

#include <vector>

#include "monitor/model/mem_event.h"

namespace memtap::reader {

void sort_by_time(std::vector<MemEvent>* events);

}  // namespace memtap::reader
