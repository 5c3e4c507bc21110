// A PyTorch snapshot as the MemEvents a live PTA pool gives (docs/design-notes.md,
// monitor/store/reader/torch "How a snapshot becomes events", and agent/python "Framework pool"):
// the same pairing rules as the live session's (monitor/engine/device_pairing.h: allocation ids,
// Attr used/total, pending frees, an OOM's largest blocks), fed from the trace instead of the
// agent.
//
//   alloc                       PTA MALLOC of the bytes asked for, as PyTorch's trace gives
//                               a block's size (owner: user_metadata; name: compile_context)
//   free_requested              PTA FREE; with the free_completed of the same block right
//   + free_completed            after it (within 10 ms) one FREE, else FREE free_pending and
//                               a FREE_COMPLETED later: Active vs Allocated
//   segment_alloc / _map        HAL MALLOC (cudaMalloc / cuMemMap) of the range: the pool's
//   segment_free / _unmap       segments, its PTA blocks inside them; a release of part of
//                               a range keeps the rest as new HAL blocks; then a PTA SNAPSHOT
//                               of the pool (allocated, reserved), as memtap_pool_state
//   snapshot                    a PTA SNAPSHOT of the pool then
//   oom                         OOM_TRIGGER (the bytes asked, the stream) and the device's
//                               largest live blocks then as OOM_TOP_ALLOC
//   annotate, user_defined,     MSTX Range_start / Range_end (stage START / END) or Mark
//   external_annotations
//   frames                      the call stacks (snapshot_stacks.h)
//   segments at the dump        a PTA SNAPSHOT at the end: allocated (the allocator's
//                               rounded block sizes) and reserved
//
// Blocks and segments that were there before the trace began (live at the dump, or freed
// or completed in the trace, but never allocated in it) are allocated at the trace's start
// with the owner kBeforeTraceOwner and counted in TorchSnapshotFacts: a trace is PyTorch's
// ring buffer of the last max_entries events, so it seldom starts with an empty pool.
//
// Times: time_us when every entry has it, kept in each device's trace order (a clock that
// stepped back gives the previous entry's time); otherwise made up, entry i of a device at
// 1 s + (i + 1) ms after the epoch (the start at 1 s, the dump a step after the last entry),
// and the facts say so. Everything is process 0, thread 0: a snapshot names
// neither.
#pragma once

#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"
#include "monitor/store/reader/torch/pickle_document.h"
#include "monitor/store/reader/torch/snapshot_layout.h"

namespace memtap::torch_snapshot {

// Appends the snapshot's events to out->events (not in time order across devices: the
// caller sorts, stably), their strings to out->strings, and fills out->torch_snapshot.
// External annotations that cannot be placed in time (a trace without time_us) are skipped
// and counted in *problems.
void append_snapshot_events(const pickle::Document& doc, const Snapshot& snapshot, Recording* out,
                            reader::RowProblems* problems);

}  // namespace memtap::torch_snapshot
