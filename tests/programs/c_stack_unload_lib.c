/* A library built twice (tests/e2e/c_stack_unload.cmake): with frame pointers and without,
 * from this one source with functions aligned to 64 bytes, so that both builds have the same
 * layout and the same return addresses: unload_entry -> unload_middle -> unload_leaf ->
 * malloc(n + 2). Without frame pointers none of the three touches rbp: a frame-pointer walk
 * that trusted a verdict learnt in the other build would step from unload_leaf straight to
 * the program's main (its rbp), leaving out unload_middle and unload_entry. */
#include <stdlib.h>

void* volatile g_unload_sink;

__attribute__((noinline)) void* unload_leaf(size_t n) {
  void* p = malloc(n);
  __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays on the stack */
  g_unload_sink = p;
  return p;
}

__attribute__((noinline)) void* unload_middle(size_t n) {
  void* p = unload_leaf(n + 1);
  __asm__ volatile("" ::: "memory");
  g_unload_sink = p;
  return p;
}

__attribute__((noinline)) void* unload_entry(size_t n) {
  void* p = unload_middle(n + 1);
  __asm__ volatile("" ::: "memory");
  g_unload_sink = p;
  return p;
}
