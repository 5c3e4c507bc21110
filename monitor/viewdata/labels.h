// The names the views give to the recording's vocabulary, the same in every view and as the
// recording spells them (msMemScope's Event Type column): "HOST", "HOST mmap", "PTA", ...
#pragma once

#include "monitor/model/mem_event.h"

namespace memtap::viewdata {

// A layer's name; HOST anonymous mappings are "HOST mmap" (their own group in the curves,
// the breakdown and the lifetime graph's colours).
const char* layer_label(Layer layer, bool is_mmap = false);

}  // namespace memtap::viewdata
