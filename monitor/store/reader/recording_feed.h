// How `memtap report` and `memtap replay` get a recording's events into the engine.
//
// Holding every event is fastest (the reader splits a database over the cores) but costs
// about 128 bytes per event: a 100-million-event recording would need 13 GB. So a file is
// held only when that fits comfortably in the memory the machine has available; otherwise
// (or with --low-memory) it is streamed in time order, in batches, in memory bounded by the
// batch and the live blocks (slower: SQLite orders the rows).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "monitor/store/reader/recording_reader.h"

namespace memtap {

struct FeedPlan {
  bool stream = false;
  std::string why;  // one line for the user when the choice was not theirs
};

// About how many events the file holds, from its size (over-counting: rows take at least
// ~100 bytes, --compact ones ~32); 0 when it cannot be read.
double estimated_events(const std::string& path);

// Streams when asked to (low_memory), or when holding the file's events (estimated from
// its size) would take more than half of MemAvailable.
FeedPlan plan_feed(const std::string& path, bool low_memory);

// Delivers the events in time order, in batches of at most `batch_events`, to `on_batch`
// (false from it stops the reading). rec->strings and rec->processes are valid for every
// batch delivered; *total_events is the number of events when known up front (held), else
// 0. False with *error (one line naming the file) when the file cannot be read. `progress`
// as in read_recording.
bool feed_recording(const std::string& path, const FeedPlan& plan, size_t batch_events,
                    Recording* rec, size_t* total_events,
                    const std::function<bool(const MemEvent* events, size_t count)>& on_batch,
                    std::string* error, ReadProgress* progress = nullptr);

}  // namespace memtap
