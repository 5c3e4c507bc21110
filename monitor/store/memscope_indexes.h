// The indexes on `memscope_dump` (memscope_schema.h) that are missing once the
// rows are in: the timestamp index at the writer's finish (the partial device and event
// indexes come with its table), all three after the bulk loads of `memtap recover` and both
// exports.
//
// CREATE INDEX sorts its keys in buffers that grow past glibc's largest mmap threshold
// (32 MiB), so each came from fresh mmap()ed pages, faulted in and zeroed one by one, and
// went back to the kernel when the index was done: for each full index of a 2 M-row
// recording the same ~50 MB again (0.02 s of the monitor's page faults each, on the thread
// everyone waits for at the end). While a SortHeap lives, blocks up to 256 MiB come from
// the heap and stay there when freed, so the next sort reuses the pages; when it goes,
// glibc's default thresholds come back and the heap is trimmed. Process-wide (mallopt);
// meant for the one thread that finishes a recording. Does nothing outside glibc, and under
// a sanitizer, whose allocator ignores mallopt.
#pragma once

#include <sqlite3.h>

#include <string>

namespace memtap {

// Builds the missing indexes inside the caller's transaction, under a SortHeap. False with
// *reason ("building msMemScope's indexes: ...") when SQLite refuses.
bool build_memscope_indexes(sqlite3* db, std::string* reason);

class SortHeap {
 public:
  SortHeap();
  ~SortHeap();
  SortHeap(const SortHeap&) = delete;
  SortHeap& operator=(const SortHeap&) = delete;
};

}  // namespace memtap
