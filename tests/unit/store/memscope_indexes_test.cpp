// SortHeap: large blocks from the heap while it lives, glibc's thresholds after.
#include "monitor/store/memscope_indexes.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tests/unit/sanitized_build.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace memtap {
namespace {

// gtest runs tests on the main thread, whose arena grows with brk: a block of the size an
// index sort uses comes from it while the SortHeap lives, and from mmap otherwise.
TEST(SortHeap, LargeBlocksComeFromTheHeapWhileItLivesAndFromMmapAfter) {
#if !defined(__GLIBC__) || defined(MEMTAP_SANITIZED_BUILD)
  GTEST_SKIP() << "glibc's own allocator only";
#else
  constexpr size_t kBlock = 48u << 20;  // past glibc's largest dynamic mmap threshold
  const size_t mapped_before = mallinfo2().hblks;
  {
    const SortHeap heap;
    void* first = malloc(kBlock);
    ASSERT_NE(first, nullptr);
    memset(first, 1, kBlock);
    EXPECT_EQ(mallinfo2().hblks, mapped_before);
    free(first);
    // Kept, not trimmed: the next sort finds the pages in place.
    EXPECT_GE(mallinfo2().fordblks, kBlock);
  }
  // Given back once it is gone.
  EXPECT_LT(mallinfo2().fordblks, kBlock);
  void* after = malloc(kBlock);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before + 1);
  free(after);
#endif
}

}  // namespace
}  // namespace memtap
