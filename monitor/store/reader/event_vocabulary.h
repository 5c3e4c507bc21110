// msMemScope's `Event` / `Event Type` words mapped onto MemEventKind and Layer.
//
// Files spell the same word several ways over the years (`START_TRACE`, `start trace`,
// `Range_start`, `MindSpore` / `MINDSPORE`), so words are compared without case and
// without ' ', '_' and '-'. Anything unknown becomes kOther: it is kept and counted, never
// an error, because a newer msMemScope adding an event must not make its files unreadable.
#pragma once

#include <string_view>

#include "monitor/model/mem_event.h"

namespace memtap::reader {

struct EventClass {
  MemEventKind kind = MemEventKind::kOther;
  Layer layer = Layer::kOther;  // MALLOC/FREE/FREE_COMPLETED (and ACCESS, from Attr "type"),
                                // a framework pool's SNAPSHOT (PTA); else kOther
};

// `Event` and `Event Type` of one row.
EventClass classify_event(std::string_view event, std::string_view event_type);

// HOST, HOST_PINNED, HAL, PTA, PTA_WORKSPACE, ATB, MINDSPORE; anything else is kOther.
Layer layer_from_text(std::string_view text);

}  // namespace memtap::reader
