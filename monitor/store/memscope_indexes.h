// msMemScope's three indexes on `memscope_dump`, built once the rows are in: by the writer's
// finish, `memtap recover` and both exports.
//
// Each CREATE INDEX sorts its keys in buffers that grow past glibc's largest mmap
// threshold (32 MiB), so each came from fresh mmap()ed pages, faulted in and zeroed one by
// one, and went back to the kernel when the index was done: three times over the same
// ~50 MB for the three indexes of a 2 M-row recording (0.06 s of the monitor's page faults,
// on the thread everyone waits for at the end). While a SortHeap lives, blocks up to
// 256 MiB come from the heap and stay there when freed, so the next index reuses the
// pages; when it goes, glibc's default thresholds come back and the heap is trimmed.
// Process-wide (mallopt); meant for the one thread that finishes a recording. Does
// nothing outside glibc, and under a sanitizer, whose allocator ignores mallopt.
#pragma once

#include <sqlite3.h>

#include <string>

namespace memtap {

// Builds the indexes (kCreateMemscopeDumpIndexesSql) inside the caller's transaction, under
// a SortHeap. False with *reason ("building msMemScope's indexes: ...") when SQLite refuses.
bool build_memscope_indexes(sqlite3* db, std::string* reason);

class SortHeap {
 public:
  SortHeap();
  ~SortHeap();
  SortHeap(const SortHeap&) = delete;
  SortHeap& operator=(const SortHeap&) = delete;
};

}  // namespace memtap
