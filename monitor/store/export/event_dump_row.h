// A MemEvent read from any file, as the DumpRow memtap's own writer would have made of it:
// the inverse of event_from_row (monitor/engine/row_events.h). Exported rows then go through
// the writer's own spelling (memscope_format.h, DumpInserter), so a file memtap exports reads
// like one it recorded, and reads back into the same events.
//
// DumpRow speaks memtap's vocabulary, which is msMemScope's minus what memtap never records.
// Events outside it have no row: ACCESS, blocks of the PTA_WORKSPACE, ATB and MINDSPORE pools
// or of a layer the reader did not know, a device's SNAPSHOT other than its pool's, and
// events of no known kind (msMemScope's "acl init"). The exporter leaves them out and says
// how many (none of them is in a memtap recording).
#pragma once

#include "monitor/model/dump_row.h"
#include "monitor/model/mem_event.h"

namespace memtap {

// Fills *row from `event`, whose string ids become the row's (the caller defines them to the
// writer from `strings`). False when the event has no row (above); *row is then unspecified.
bool dump_row_from_event(const MemEvent& event, const StringTable& strings, DumpRow* row);

}  // namespace memtap
