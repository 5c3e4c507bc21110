/* memtap_bench_cuda_hooks: what a CUDA call costs in this process, per case, for the device
 * hooks' overhead (tests/bench/run_cuda.sh runs it without and with memtap's agent and takes
 * the difference). Built against the stand-in runtime of tests/fake_cuda/ as
 * tests/programs/cuda_pool_prog.c is: the runtime bound by symbol, the driver reached through
 * cudaGetDriverEntryPointByVersion (version 12000), as PyTorch does.
 *
 * Cases:
 *   malloc_free    cudaMalloc + cudaFree of SIZE bytes
 *   async          cudaMallocAsync + cudaFreeAsync of SIZE bytes on a created stream
 *   driver_alloc   cuMemAlloc_v2 + cuMemFree_v2 through entry points
 *   launch         cudaLaunchKernel of a host function (bench_kernel) on the stream
 *   driver_launch  cuLaunchKernel through an entry point (of a function from cuModuleLoadData
 *                  and cuModuleGetFunction, also entry points) on the stream
 *   driver_alloc_direct, driver_launch_direct
 *                  the same driver functions as the loaded libcuda's own cuGetProcAddress_v2
 *                  gives them (taken with glibc's dlsym), which no hook wraps: under the agent
 *                  the in-process difference to driver_alloc / driver_launch is the whole
 *                  hook; without it, the two are the same function
 *   device_query   cuCtxGetDevice through an entry point: the query memtap's hooks make for
 *                  every device event; no hook runs here
 *   pool_block     what a framework pool (PyTorch's, through memtap.torch's tracker) tells
 *                  memtap per tensor: memtap_pool_alloc + memtap_pool_free_requested +
 *                  memtap_pool_free_completed (3 calls); without the agent the same three
 *                  calls go to empty functions of this program, as a tracker's forward would
 * Each case runs ITERATIONS times once untimed (lookups, the first device's description,
 * the kernel's name); then REPS rounds time every chosen case in turn, ITERATIONS times each,
 * and each case reports its best (least) round, wall clock and the thread's CPU time
 * separately, in ns per call: a pair's time over two for the allocation cases. With the
 * stand-in (tests/fake_cuda) an allocation is an mmap and a free a munmap; with
 * tests/bench/cuda_cheap_driver.c first on LD_LIBRARY_PATH, a slot of a static arena. On a
 * GPU machine, with CUDA 13's libcudart.so.13 on LD_LIBRARY_PATH, the allocation cases and
 * device_query run against the real runtime and driver (the launch cases need a real kernel).
 *
 * Usage: memtap_bench_cuda_hooks [--iterations N] [--reps R] [--size BYTES] [CASE ...]
 *   defaults 200000, 5, 4096, every case
 * Output: a line naming the CUDA libraries (and the agent) loaded, then per case
 *   RESULT cuda_CASE_ns_per_call=W cuda_CASE_cpu_ns_per_call=C
 * Every CUDA call is checked; an unexpected result ends the program with exit status 1.
 *
 * The program starts an idle thread first. A CUDA process has threads (the driver starts its
 * own as it initialises; PyTorch its pools), so glibc takes its multithreaded paths (an
 * atomic instruction per mutex lock, malloc's arena lock) with or without memtap, whose
 * sender threads also make it so. Without that thread only the plain run was
 * single-threaded, and the difference charged the hook with the stand-in driver's mutex
 * becoming atomic: 15-30 ns a call on the project's VM. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/fake_cuda/fake_cuda_api.h"

/* The kernel: a host function, named by the stand-in runtime with dladdr (so the program is
 * linked with -rdynamic). */
__attribute__((noinline, used)) void bench_kernel(float* x) {
  __asm__ volatile("" : : "r"(x) : "memory");
}

static void fail_rt(cudaError_t e, const char* call) {
  fprintf(stderr, "memtap_bench_cuda_hooks: %s returned %d (%s)\n", call, (int)e,
          cudaGetErrorName(e));
  exit(1);
}
static void fail_cu(CUresult r, const char* call) {
  fprintf(stderr, "memtap_bench_cuda_hooks: %s returned %d\n", call, (int)r);
  exit(1);
}
#define RT(call)                                                    \
  do {                                                              \
    cudaError_t e_ = (call);                                        \
    if (__builtin_expect(e_ != cudaSuccess, 0)) fail_rt(e_, #call); \
  } while (0)
#define CU(call)                                                     \
  do {                                                               \
    CUresult r_ = (call);                                            \
    if (__builtin_expect(r_ != CUDA_SUCCESS, 0)) fail_cu(r_, #call); \
  } while (0)

typedef CUresult (*CtxGetDeviceFn)(CUdevice*);
typedef void* (*DlsymFn)(void*, const char*);

static struct {
  size_t size;
  cudaStream_t stream;
  PFN_cuMemAlloc_v3020 mem_alloc;
  PFN_cuMemFree_v3020 mem_free;
  PFN_cuLaunchKernel_v4000 launch_kernel;
  PFN_cuMemAlloc_v3020 direct_mem_alloc; /* the driver's own, unwrapped */
  PFN_cuMemFree_v3020 direct_mem_free;
  PFN_cuLaunchKernel_v4000 direct_launch_kernel;
  CtxGetDeviceFn ctx_get_device;
  CUfunction function;
  float* buffer;
  void* args[1];
} g;

static void* entry_point(const char* symbol) {
  void* fn = NULL;
  enum cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  RT(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || !fn) {
    fprintf(stderr, "memtap_bench_cuda_hooks: no driver entry point %s\n", symbol);
    exit(1);
  }
  return fn;
}

/* The driver's functions as the loaded libcuda.so.1 itself answers, unwrapped. glibc's dlsym
 * comes from libc's handle: a preloaded memtap answers a handle lookup of a driver function
 * with its wrapper, and "dlsym" is none. */
static void find_direct_functions(void) {
  void* libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
  void* cuda = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  DlsymFn libc_dlsym = libc ? (DlsymFn)dlsym(libc, "dlsym") : NULL;
  PFN_cuGetProcAddress_v12000 lookup =
      libc_dlsym && cuda ? (PFN_cuGetProcAddress_v12000)libc_dlsym(cuda, "cuGetProcAddress_v2")
                         : NULL;
  if (!lookup) {
    fprintf(stderr, "memtap_bench_cuda_hooks: no cuGetProcAddress_v2 in libcuda.so.1\n");
    exit(1);
  }
  CU(lookup("cuMemAlloc", (void**)&g.direct_mem_alloc, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
  CU(lookup("cuMemFree", (void**)&g.direct_mem_free, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
  CU(lookup("cuLaunchKernel", (void**)&g.direct_launch_kernel, 12000, CU_GET_PROC_ADDRESS_DEFAULT,
            NULL));
  if (!g.direct_mem_alloc || !g.direct_mem_free || !g.direct_launch_kernel) {
    fprintf(stderr,
            "memtap_bench_cuda_hooks: the driver lacks cuMemAlloc/cuMemFree/cuLaunchKernel\n");
    exit(1);
  }
}

static void find_pool_abi(void);

/* kernels: whether a launch case runs (a real driver refuses the made-up module image, so the
 * allocation cases run without it on a GPU too). */
static void setup(int kernels) {
  RT(cudaSetDevice(0));
  RT(cudaStreamCreate(&g.stream));
  g.mem_alloc = (PFN_cuMemAlloc_v3020)entry_point("cuMemAlloc");
  g.mem_free = (PFN_cuMemFree_v3020)entry_point("cuMemFree");
  g.launch_kernel = (PFN_cuLaunchKernel_v4000)entry_point("cuLaunchKernel");
  g.ctx_get_device = (CtxGetDeviceFn)entry_point("cuCtxGetDevice");
  if (kernels) {
    PFN_cuModuleLoadData_v2000 module_load_data =
        (PFN_cuModuleLoadData_v2000)entry_point("cuModuleLoadData");
    PFN_cuModuleGetFunction_v2000 module_get_function =
        (PFN_cuModuleGetFunction_v2000)entry_point("cuModuleGetFunction");
    static const char image[] = "memtap bench cubin";
    CUmodule module = NULL;
    CU(module_load_data(&module, image));
    CU(module_get_function(&g.function, module, "bench_driver_kernel"));
  }
  RT(cudaMalloc((void**)&g.buffer, 4096));
  g.args[0] = &g.buffer;
  find_direct_functions();
  find_pool_abi();
}

/* ---------------------------------------------------------------------------- the cases */

static void run_malloc_free(long n) {
  for (long i = 0; i < n; i++) {
    void* p = NULL;
    RT(cudaMalloc(&p, g.size));
    RT(cudaFree(p));
  }
}

static void run_async(long n) {
  for (long i = 0; i < n; i++) {
    void* p = NULL;
    RT(cudaMallocAsync(&p, g.size, g.stream));
    RT(cudaFreeAsync(p, g.stream));
  }
}

static void run_driver_alloc(long n) {
  for (long i = 0; i < n; i++) {
    CUdeviceptr p = 0;
    CU(g.mem_alloc(&p, g.size));
    CU(g.mem_free(p));
  }
}

static void run_driver_alloc_direct(long n) {
  for (long i = 0; i < n; i++) {
    CUdeviceptr p = 0;
    CU(g.direct_mem_alloc(&p, g.size));
    CU(g.direct_mem_free(p));
  }
}

static void run_launch(long n) {
  const dim3 grid = {1, 1, 1}, block = {128, 1, 1};
  for (long i = 0; i < n; i++) {
    RT(cudaLaunchKernel((const void*)bench_kernel, grid, block, g.args, 0, g.stream));
  }
}

static void run_driver_launch(long n) {
  for (long i = 0; i < n; i++) {
    CU(g.launch_kernel(g.function, 1, 1, 1, 128, 1, 1, 0, g.stream, g.args, NULL));
  }
}

static void run_driver_launch_direct(long n) {
  for (long i = 0; i < n; i++) {
    CU(g.direct_launch_kernel(g.function, 1, 1, 1, 128, 1, 1, 0, g.stream, g.args, NULL));
  }
}

/* The agent's pool C ABI (agent/memtap.h), or this program's empty stand-ins without it. */
static void no_pool_alloc(int device, uint64_t addr, uint64_t size, uint64_t stream) {
  (void)device, (void)addr, (void)size, (void)stream;
  __asm__ volatile("");
}
static void no_pool_free(int device, uint64_t addr, uint64_t stream) {
  (void)device, (void)addr, (void)stream;
  __asm__ volatile("");
}
static struct {
  void (*alloc)(int, uint64_t, uint64_t, uint64_t);
  void (*free_requested)(int, uint64_t, uint64_t);
  void (*free_completed)(int, uint64_t, uint64_t);
} pool_abi;

static void find_pool_abi(void) {
  *(void**)&pool_abi.alloc = dlsym(RTLD_DEFAULT, "memtap_pool_alloc");
  *(void**)&pool_abi.free_requested = dlsym(RTLD_DEFAULT, "memtap_pool_free_requested");
  *(void**)&pool_abi.free_completed = dlsym(RTLD_DEFAULT, "memtap_pool_free_completed");
  if (!pool_abi.alloc || !pool_abi.free_requested || !pool_abi.free_completed) {
    pool_abi.alloc = no_pool_alloc;
    pool_abi.free_requested = pool_abi.free_completed = no_pool_free;
  }
}

static void run_pool_block(long n) {
  const uint64_t base = 0x7f0000000000ull, stream = (uint64_t)(uintptr_t)g.stream;
  for (long i = 0; i < n; i++) {
    const uint64_t addr = base + (uint64_t)(i & 1023) * 4096;
    pool_abi.alloc(0, addr, g.size, stream);
    pool_abi.free_requested(0, addr, stream);
    pool_abi.free_completed(0, addr, stream);
  }
}

static void run_device_query(long n) {
  for (long i = 0; i < n; i++) {
    CUdevice device = -1;
    CU(g.ctx_get_device(&device));
  }
}

struct bench_case {
  const char* name;
  void (*run)(long n);
  int calls_per_iteration;
};

static const struct bench_case kCases[] = {
    {"malloc_free", run_malloc_free, 2},
    {"async", run_async, 2},
    {"driver_alloc", run_driver_alloc, 2},
    {"driver_alloc_direct", run_driver_alloc_direct, 2},
    {"launch", run_launch, 1},
    {"driver_launch", run_driver_launch, 1},
    {"driver_launch_direct", run_driver_launch_direct, 1},
    {"device_query", run_device_query, 1},
    {"pool_block", run_pool_block, 1},
};
enum { kCaseCount = sizeof kCases / sizeof kCases[0] };

/* ------------------------------------------------------------------------------ timing */

static double now_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Times the chosen cases, one after the other in each of `reps` rounds, so that a drift of
 * the machine's speed touches them alike. */
static void measure(const int* chosen, long n, int reps) {
  double best_wall[kCaseCount] = {0}, best_cpu[kCaseCount] = {0};
  for (int i = 0; i < kCaseCount; i++) {
    if (chosen[i]) kCases[i].run(n); /* untimed */
  }
  for (int rep = 0; rep < reps; rep++) {
    for (int i = 0; i < kCaseCount; i++) {
      if (!chosen[i]) continue;
      double wall = now_ns(CLOCK_MONOTONIC), cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
      kCases[i].run(n);
      cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
      wall = now_ns(CLOCK_MONOTONIC) - wall;
      if (rep == 0 || wall < best_wall[i]) best_wall[i] = wall;
      if (rep == 0 || cpu < best_cpu[i]) best_cpu[i] = cpu;
    }
  }
  for (int i = 0; i < kCaseCount; i++) {
    if (!chosen[i]) continue;
    const double calls = (double)n * kCases[i].calls_per_iteration;
    printf("RESULT cuda_%s_ns_per_call=%.1f cuda_%s_cpu_ns_per_call=%.1f\n", kCases[i].name,
           best_wall[i] / calls, kCases[i].name, best_cpu[i] / calls);
  }
}

/* Names the CUDA libraries this process loaded, so that a log says which stand-in it ran. */
static int print_cuda_library(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  if (info->dlpi_name && (strstr(info->dlpi_name, "libcuda") || strstr(info->dlpi_name, "memtap")))
    printf(" %s", info->dlpi_name);
  return 0;
}

static long number(const char* text, const char* option) {
  char* end = NULL;
  long v = strtol(text ? text : "", &end, 10);
  if (!text || *end || v <= 0) {
    fprintf(stderr, "memtap_bench_cuda_hooks: %s needs a positive number\n", option);
    exit(2);
  }
  return v;
}

static void* idle_thread(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

int main(int argc, char** argv) {
  pthread_t idle;
  if (pthread_create(&idle, NULL, idle_thread, NULL) != 0) {
    fprintf(stderr, "memtap_bench_cuda_hooks: cannot start a thread\n");
    return 1;
  }
  long iterations = 200000;
  int reps = 5;
  g.size = 4096;
  int chosen[kCaseCount] = {0}, any = 0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--iterations") == 0) {
      iterations = number(argv[++a], "--iterations");
    } else if (strcmp(argv[a], "--reps") == 0) {
      reps = (int)number(argv[++a], "--reps");
    } else if (strcmp(argv[a], "--size") == 0) {
      g.size = (size_t)number(argv[++a], "--size");
    } else {
      int found = 0;
      for (int i = 0; i < kCaseCount; i++) {
        if (strcmp(argv[a], kCases[i].name) == 0) chosen[i] = found = any = 1;
      }
      if (!found) {
        fprintf(stderr,
                "usage: %s [--iterations N] [--reps R] [--size BYTES] [CASE ...]\n"
                "cases: malloc_free async driver_alloc driver_alloc_direct launch driver_launch\n"
                "       pool_block\n"
                "       driver_launch_direct device_query\n",
                argv[0]);
        return 2;
      }
    }
  }
  if (!any) {
    for (int i = 0; i < kCaseCount; i++) chosen[i] = 1;
  }
  int kernels = 0;
  for (int i = 0; i < kCaseCount; i++) kernels |= chosen[i] && strstr(kCases[i].name, "launch");
  setup(kernels);
  printf("memtap_bench_cuda_hooks: %ld iterations, best of %d, %zu bytes; loaded:", iterations,
         reps, g.size);
  dl_iterate_phdr(print_cuda_library, NULL);
  printf("\n");
  measure(chosen, iterations, reps);
  RT(cudaFree(g.buffer));
  RT(cudaStreamDestroy(g.stream));
  return 0;
}
