// What a PyTorch CUDA memory snapshot holds (docs/design-notes.md, monitor/store/reader/torch "What
// a snapshot holds"), read off the pickle's plain data into plain structs: the allocator's segments
// and their blocks at the dump, each device's trace, and the external annotations.
//
// The layouts PyTorch wrote over its versions:
//   torch.cuda.memory._dump_snapshot()  a dict: `segments`, `device_traces` (a list per
//                                       device), and since 2.1 or so `allocator_settings`
//                                       and `external_annotations`;
//   torch.cuda.memory_snapshot()        a bare list of segments (no trace);
//   torch 2.0                           blocks without `address` (their segment's address
//                                       plus the sizes of the blocks before them) and with
//                                       `history` ([{addr, real_size, frames}], the last is
//                                       the block's allocation); trace entries without
//                                       `time_us`;
//   newest                              trace entries with `compile_context` and
//                                       `user_metadata`; `user_defined` entries (old
//                                       record_function annotations) and `annotate` ones.
// Strings and frame lists stay in the pickle document (ValueIds): a snapshot's frames are
// shared objects, and snapshot_events.h formats each once.
//
// A value of the wrong type inside an entry skips that entry (counted in RowProblems, the
// first one named by its place: "device_traces[0][17]: 'size' is a str, expected an int");
// a file whose top level is no snapshot is an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/store/reader/row_problems.h"
#include "monitor/store/reader/torch/pickle_document.h"

namespace memtap::torch_snapshot {

using pickle::kNoValue;
using pickle::ValueId;

enum class Action : uint8_t {
  kAlloc,          // a block handed out
  kFreeRequested,  // its owner freed it (Allocated drops)
  kFreeCompleted,  // the pool took it back (Active drops)
  kSegmentAlloc,   // cudaMalloc of a segment
  kSegmentFree,
  kSegmentMap,  // expandable segments: pages mapped into a segment
  kSegmentUnmap,
  kSnapshot,  // a snapshot was taken (torch 2.0 records one at an OOM)
  kOom,       // an allocation failed: size asked, device_free
  kAnnotate,  // a mark or a range start/end (name, stage)
};

enum class Stage : uint8_t { kMark, kStart, kEnd };

struct TraceEntry {
  Action action = Action::kAlloc;
  int32_t device = 0;                // the index of its list in device_traces
  uint64_t addr = 0;                 // the block's or segment's; OOM: 0
  uint64_t size = 0;                 // bytes; OOM: asked for
  uint64_t stream = 0;               // cudaStream_t as an integer
  int64_t time_us = -1;              // since the epoch; -1: the entry has none
  uint64_t device_free = 0;          // OOM: free bytes on the device then
  ValueId frames = kNoValue;         // list of {filename, line, name}, innermost first
  ValueId user_metadata = kNoValue;  // str
  ValueId compile_context = kNoValue;
  ValueId name = kNoValue;  // kAnnotate: the text
  Stage stage = Stage::kMark;
};

enum class BlockState : uint8_t { kActiveAllocated, kActivePendingFree, kInactive };

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested_size = 0;
  BlockState state = BlockState::kInactive;
  ValueId frames = kNoValue;  // where it was allocated (torch 2.0: its history's last)
};

struct Segment {
  int32_t device = 0;
  uint64_t address = 0;
  uint64_t total_size = 0;
  uint64_t allocated_size = 0;
  uint64_t active_size = 0;
  uint64_t stream = 0;
  bool is_expandable = false;
  ValueId frames = kNoValue;
  uint32_t first_block = 0;  // in Snapshot::blocks
  uint32_t block_count = 0;
};

struct Annotation {
  int32_t device = 0;
  Stage stage = Stage::kMark;
  ValueId name = kNoValue;
  int64_t time_us = -1;
};

struct Snapshot {
  bool bare_list = false;  // memory_snapshot()'s list of segments: no trace at all
  // The pool at the dump is known: a bare list, or a dict with `segments` (a dict may have
  // only `device_traces`).
  bool has_segments = false;
  std::vector<Segment> segments;
  std::vector<Block> blocks;
  // Device by device, each in its trace's order.
  std::vector<TraceEntry> entries;
  std::vector<Annotation> annotations;
};

// Reads `doc` into *out. Entries it cannot understand are skipped and counted in
// *problems (every entry, annotation, segment and block counts in problems->rows). False
// with *error (one line, without the file's name) when the pickle is no snapshot.
bool read_snapshot_layout(const pickle::Document& doc, Snapshot* out, reader::RowProblems* problems,
                          std::string* error);

}  // namespace memtap::torch_snapshot
