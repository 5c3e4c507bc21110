/* Frame-pointer verdicts across a dlclose (tests/e2e/c_stack_unload_test.cpp), run with C
 * stacks: dlopen()s argv[1] (c_stack_unload_lib.c built with frame pointers), allocates
 * through its unload_entry a few times (the first capture learns the frames' verdicts, the
 * later ones walk them), dlclose()s it; then dlopen()s argv[2] (the same source built without
 * frame pointers), which the loader maps at the same address, and allocates through it.
 * Prints both load addresses ("fp base 0x...", "nofp base 0x...") and "c_stack_unload ok". */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

enum { kFpBytes = 2 * 1024 * 1024 + 100, kNoFpBytes = 2 * 1024 * 1024 + 200, kRounds = 3 };

typedef void* (*Entry)(size_t);

static void* open_library(const char* label, const char* path, Entry* entry) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    return NULL;
  }
  *entry = (Entry)dlsym(lib, "unload_entry");
  Dl_info info;
  if (!*entry || !dladdr((void*)*entry, &info)) {
    fprintf(stderr, "%s: no unload_entry\n", path);
    return NULL;
  }
  printf("%s base %p\n", label, info.dli_fbase);
  return lib;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIB_WITH_FRAME_POINTERS LIB_WITHOUT\n", argv[0]);
    return 2;
  }
  Entry fp_entry, nofp_entry;
  void* fp = open_library("fp", argv[1], &fp_entry);
  if (!fp) return 3;
  for (int i = 0; i < kRounds; ++i) free(fp_entry(kFpBytes));
  if (dlclose(fp) != 0) return 4;
  void* nofp = open_library("nofp", argv[2], &nofp_entry);
  if (!nofp) return 5;
  for (int i = 0; i < kRounds; ++i) free(nofp_entry(kNoFpBytes));
  dlclose(nofp);
  printf("c_stack_unload ok\n");
  return 0;
}
