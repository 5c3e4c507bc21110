/* Asks whether CUDA is in the process the ways programs ask: dlsym with RTLD_DEFAULT and
 * RTLD_NEXT, and dlsym on the program's own handle (dlopen(NULL), which Python's
 * ctypes.CDLL(None) is), for runtime and driver functions the agent hooks and one it does not.
 * Then, given a library, loads it (RTLD_GLOBAL, or RTLD_LOCAL when the second argument is
 * "local") and asks again.
 *
 * Usage: memtap_test_cuda_probe [LIBRARY [local]]
 * Prints one line a lookup: "<phase> <route> <name> found" or "<phase> <route> <name> absent
 * <dlerror() text>", phase "before" or "after"; exits 1 if LIBRARY does not load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char* const kNames[] = {
    "cudaMalloc",    "cudaLaunchKernel",    "__cudaLaunchKernel", "cudaGetDriverEntryPoint",
    "cuMemAlloc_v2", "cuGetProcAddress_v2", "cuLaunchKernel",     "cudaDeviceSynchronize",
    "malloc",
};

static void probe(const char* phase) {
  void* self = dlopen(NULL, RTLD_NOW);
  for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; i++) {
    const char* routes[] = {"default", "next", "self"};
    void* handles[] = {RTLD_DEFAULT, RTLD_NEXT, self};
    for (int r = 0; r < 3; r++) {
      dlerror();
      void* found = dlsym(handles[r], kNames[i]);
      const char* error = found ? NULL : dlerror();
      if (found) {
        printf("%s %s %s found\n", phase, routes[r], kNames[i]);
      } else {
        printf("%s %s %s absent %s\n", phase, routes[r], kNames[i], error ? error : "(no dlerror)");
      }
    }
  }
}

int main(int argc, char** argv) {
  probe("before");
  if (argc < 2) return 0;
  int mode = argc > 2 && strcmp(argv[2], "local") == 0 ? RTLD_LOCAL : RTLD_GLOBAL;
  if (!dlopen(argv[1], RTLD_NOW | mode)) {
    fprintf(stderr, "memtap_test_cuda_probe: %s\n", dlerror());
    return 1;
  }
  probe("after");
  return 0;
}
