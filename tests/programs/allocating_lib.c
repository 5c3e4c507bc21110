/* memtap_test_allocating_lib: a library that allocates, for dlopen/dlclose under memtap.
 *
 * Its constructor allocates one block of 50023 bytes, which its destructor (at dlclose)
 * frees; allocate_blocks(n) allocates n blocks of 50021 bytes and frees them. */
#include <stdlib.h>

static char* g_kept;
static void* volatile g_sink;

__attribute__((constructor)) static void on_load(void) {
  g_kept = malloc(50023);
  if (g_kept == NULL) abort();
  g_kept[0] = 1;
}

__attribute__((destructor)) static void on_unload(void) {
  free(g_kept);
}

__attribute__((noinline)) void allocate_blocks(int n) {
  void* blocks[64];
  if (n > 64) n = 64;
  for (int i = 0; i < n; ++i) {
    blocks[i] = malloc(50021);
    if (blocks[i] == NULL) abort();
    g_sink = blocks[i];
  }
  for (int i = 0; i < n; ++i) free(blocks[i]);
}
