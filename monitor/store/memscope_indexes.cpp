// See memscope_indexes.h.
#include "monitor/store/memscope_indexes.h"

#include <cstdlib>  // defines __GLIBC__ where glibc is the C library

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "monitor/store/memscope_schema.h"
#include "monitor/store/sqlite_status.h"

namespace memtap {

bool build_memscope_indexes(sqlite3* db, std::string* reason) {
  const SortHeap heap;
  int rc = sqlite3_exec(db, kCreateMemscopeDumpTimestampIndexSql, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(db, kCreateMemscopeDumpPartialIndexesSql, nullptr, nullptr, nullptr);
  }
  if (rc == SQLITE_OK) return true;
  *reason = "building msMemScope's indexes: " + sqlite_error_text(db, rc);
  return false;
}

#if defined(__GLIBC__)
namespace {
// glibc's defaults (mallopt(3)); setting them explicitly leaves its dynamic threshold off,
// which only means that large blocks keep going to mmap, as they did before.
constexpr int kDefaultThreshold = 128 * 1024;
constexpr int kSortThreshold = 256 << 20;
}  // namespace

SortHeap::SortHeap() {
  mallopt(M_MMAP_THRESHOLD, kSortThreshold);
  mallopt(M_TRIM_THRESHOLD, 2 * kSortThreshold);
}

SortHeap::~SortHeap() {
  mallopt(M_MMAP_THRESHOLD, kDefaultThreshold);
  mallopt(M_TRIM_THRESHOLD, kDefaultThreshold);
  malloc_trim(0);
}
#else
SortHeap::SortHeap() = default;
SortHeap::~SortHeap() = default;
#endif

}  // namespace memtap
