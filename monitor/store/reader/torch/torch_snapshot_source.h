// A PyTorch CUDA memory snapshot (docs/design.md, monitor/store/reader/torch) as a recording: the
// file's bytes through our own plain-data pickle reader (pickle_reader.h), its layout
// (snapshot_layout.h), and its events (snapshot_events.h). Held whole, like a CSV: a
// snapshot's trace is in order per device only, and the pool at its end is known only once
// the whole file is read.
#pragma once

#include <cstddef>
#include <string>

#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"

namespace memtap::reader {

// Whether a file's first bytes are a pickle's PROTO opcode (0x80 and a protocol from 2 on:
// Python writes PROTO from protocol 2, and a newer protocol gets the reader's own error).
bool is_pickle_head(const char* head, size_t size);

// Appends the snapshot's events to out->events (each device's in order; the caller sorts
// them by time) and sets out->format and out->torch_snapshot. Entries it cannot understand
// are counted in *problems. False with *error (one line naming the file) when the file is
// no pickle memtap reads (an opcode it refuses, a truncated or corrupt pickle: the byte
// offset and the opcode) or no snapshot.
bool read_torch_snapshot(const std::string& path, Recording* out, RowProblems* problems,
                         std::string* error);

}  // namespace memtap::reader
