/* A library dlopen()ed by c_stack_symbols.c after its start: lib_leaf_alloc allocates
 * 2 MiB + 11 bytes, so that the block's C stack begins in this library. */
#include <stdlib.h>
#include <string.h>

enum { kLibBytes = 2 * 1024 * 1024 + 11 };

__attribute__((noinline)) void* lib_leaf_alloc(size_t extra) {
  void* p = malloc(kLibBytes + extra);
  if (p) memset(p, 2, 64); /* not a tail call */
  return p;
}
