// The torch-snapshot export: a recording's accelerator memory as the pickle
// torch.cuda.memory._dump_snapshot() writes, so that PyTorch's memory viewer
// (pytorch.org/memory_viz: Active Memory Timeline, Allocator State History, Active Cached
// Segment Timeline) and its Python tools (torch.cuda._memory_viz) open a memtap recording as
// they open PyTorch's own snapshots. The layout is ../shared/DESIGN.md §7's, which memtap's
// own reader takes back (store/reader/torch/): an exported file reports as its recording.
//
//   recording (one process, each accelerator device)      snapshot
//   HAL MALLOC / FREE (cudaMalloc, ...)                     segment_alloc / segment_free
//   HAL MALLOC / FREE named cuMemMap (expandable segments)  segment_map / segment_unmap
//   PTA MALLOC                                              alloc
//   PTA FREE (taken back at once)                           free_requested, free_completed
//   PTA FREE pending, then FREE_COMPLETED                   free_requested ... free_completed
//   OOM_TRIGGER                                             oom (size asked, device_free)
//   call stacks, owner, operator                            frames, user_metadata,
//                                                           compile_context
//   MSTX marks, Range_start / Range_end                     external_annotations
//   what is live at the end                                 segments, each tiled by its
//                                                           blocks (active_allocated,
//                                                           active_pending_free, inactive)
//
// A device without framework-pool (PTA) events (a CUDA program without PyTorch's tracker)
// has its driver blocks as its tensors: each HAL block is a segment holding one block, as
// the curves count them (engine/timeline/curve_rules.h). The viewer draws every block inside
// a segment at every step: where the recording's pool blocks do not lie inside its HAL
// segments (the driver calls were not recorded, or a file without them: a CSV), the device
// gets one segment spanning all its blocks, present from before the trace, and the summary
// says so. Times are time_us (microseconds since the epoch); device_free of an oom is the
// device's capacity (START_TRACE total) less what the process held from the driver then, 0
// where the capacity is unknown. Marks and ranges are external_annotations (stage START,
// END; MARK for a mark, which PyTorch itself never writes). Host memory has no place in the
// format and is left out, and said so.
//
// A snapshot's pool from before its trace (memtap reads it as blocks and segments of owner
// kBeforeTraceOwner at the trace's first instant) goes back into the pool, not the trace, so
// that a snapshot exported again reports as it did.
#pragma once

#include <string>

#include "monitor/store/export/recording_export.h"

namespace memtap {

// Writes `partial` (which must not exist). Fails, naming `in`, when no accelerator device has
// memory events, or when several processes do and options.pid chooses none.
bool export_torch_snapshot(const std::string& in, const std::string& partial,
                           const ExportOptions& options, ExportSummary* summary,
                           std::string* error);

}  // namespace memtap
