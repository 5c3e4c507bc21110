/* memtap_test_dlopen_loop LIB ROUNDS: ROUNDS times, loads LIB (memtap_test_allocating_lib)
 * with dlopen, calls its allocate_blocks(10), and unloads it with dlclose. Prints
 * "rounds ROUNDS" and exits 0; a loading error is printed and exits 1. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIB ROUNDS\n", argv[0]);
    return 2;
  }
  const int rounds = atoi(argv[2]);
  for (int r = 0; r < rounds; ++r) {
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    void (*allocate_blocks)(int) = (void (*)(int))dlsym(lib, "allocate_blocks");
    if (allocate_blocks == NULL) {
      fprintf(stderr, "dlsym: %s\n", dlerror());
      return 1;
    }
    allocate_blocks(10);
    if (dlclose(lib) != 0) {
      fprintf(stderr, "dlclose: %s\n", dlerror());
      return 1;
    }
  }
  printf("rounds %d\n", rounds);
  return 0;
}
