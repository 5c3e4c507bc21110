/* A program whose large allocation has a known C call stack, for the C stacks test
 * (tests/e2e/stacks_test.cpp): main -> memtap_test_stack_outer -> memtap_test_stack_inner
 * -> malloc(5 MiB). Linked with -rdynamic so that dladdr names the functions. Then 100
 * small blocks, which must get no stack. Prints "stack_alloc ok". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kLargeBytes = 5 * 1024 * 1024 + 3, kSmallBytes = 200 };

void* volatile g_sink;

__attribute__((noinline)) void* memtap_test_stack_inner(size_t n) {
  void* p = malloc(n);
  if (p) memset(p, 1, 64); /* not a tail call: the frame stays on the stack */
  return p;
}

__attribute__((noinline)) void* memtap_test_stack_outer(size_t n) {
  void* p = memtap_test_stack_inner(n);
  g_sink = p;
  return p;
}

int main(void) {
  void* large = memtap_test_stack_outer(kLargeBytes);
  if (!large) return 1;
  for (int i = 0; i < 100; ++i) {
    void* small = malloc(kSmallBytes);
    g_sink = small;
    free(small);
  }
  free(large);
  printf("stack_alloc ok\n");
  return 0;
}
