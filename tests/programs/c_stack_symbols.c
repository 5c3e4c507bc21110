/* A program whose C stacks the monitor symbolises (tests/e2e/c_stack_symbols_test.cpp),
 * built with -g and without -rdynamic: main -> deep_middle -> deep_leaf_alloc ->
 * malloc(3 MiB + 7). Then, if given a library path, dlopen()s it (after start, so its
 * module is reported in a later batch than the program's) and calls its lib_leaf_alloc.
 * Prints "c_stack_symbols ok". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kLeafBytes = 3 * 1024 * 1024 + 7 };

void* volatile g_sink;

__attribute__((noinline)) static void* deep_leaf_alloc(size_t n) {
  void* p = malloc(n);
  if (p) memset(p, 1, 64); /* not a tail call: the frame stays on the stack */
  return p;
}

__attribute__((noinline)) static void* deep_middle(size_t n) {
  void* p = deep_leaf_alloc(n);
  g_sink = p;
  return p;
}

int main(int argc, char** argv) {
  void* block = deep_middle(kLeafBytes);
  if (!block) return 1;
  free(block);
  if (argc > 1) {
    void* lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
      fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
      return 2;
    }
    void* (*lib_leaf_alloc)(size_t) = (void* (*)(size_t))dlsym(lib, "lib_leaf_alloc");
    if (!lib_leaf_alloc) return 3;
    void* q = lib_leaf_alloc(0);
    if (!q) return 4;
    free(q);
  }
  printf("c_stack_symbols ok\n");
  return 0;
}
