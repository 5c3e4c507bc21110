/* memtap_bench_cheap_cuda: a libcuda.so.1 for tests/bench/run_cuda.sh, the stand-in driver of
 * tests/fake_cuda/ with cheap device memory.
 *
 * The stand-in gives every device block its own mmap and munmap syscalls: a cudaMalloc +
 * cudaFree pair costs microseconds there, and the nanoseconds memtap's hooks add to it are
 * lost in the syscalls' noise. This library loads the stand-in (../../fake_cuda/lib/
 * libcuda.so.1 from its own directory, as the build tree and scripts/gpu-bundle.sh lay them
 * out, so that a copy runs on another machine; else the build's path, FAKE_CUDA_DRIVER)
 * and answers every lookup as it does, except four: cuMemAlloc_v2, cuMemFree_v2,
 * cuMemAllocAsync and cuMemFreeAsync hand out and take back slots of a static arena under a
 * mutex (tens of nanoseconds; the addresses are real, writable memory). Everything else
 * (contexts, streams, kernels and launches, and the cuCtxGetDevice that memtap's hooks call
 * for every device event) is the stand-in's own function, so that the runtime and the hooks
 * do the same work as with the stand-in alone.
 *
 * Chosen by the library path: run the program with LD_LIBRARY_PATH=<this directory>; the
 * stand-in runtime's dlopen("libcuda.so.1") finds it before the stand-in driver beside the
 * runtime (LD_LIBRARY_PATH comes before the runtime's RUNPATH).
 *
 * Exports what finds the driver by symbol: cuGetProcAddress(_v2), which the runtime takes
 * with dlsym, and the functions memtap's hooks take with dlsym for their own questions
 * (cuCtxGetDevice, cuMemGetInfo_v2, cuFuncGetName, cuKernelGetName), forwarded to the
 * stand-in's. The stand-in's functions are found with glibc's own dlsym (dlsym(RTLD_NEXT,
 * "dlsym")): a preloaded memtap answers a handle lookup of a driver function with its
 * wrapper, and a wrapper taken here would be given the stand-in's function for good, so that
 * the program's later lookups could not be wrapped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tests/fake_cuda/fake_cuda_api.h"

#ifndef FAKE_CUDA_DRIVER
#error "FAKE_CUDA_DRIVER: the path of the stand-in libcuda.so.1 (tests/fake_cuda)"
#endif

#define EXPORT __attribute__((visibility("default")))

typedef void* (*DlsymFn)(void*, const char*);
typedef CUresult (*GetProcAddressV1Fn)(const char*, void**, int, cuuint64_t);
typedef CUresult (*CtxGetDeviceFn)(CUdevice*);
typedef CUresult (*MemGetInfoFn)(size_t*, size_t*);
typedef CUresult (*FuncGetNameFn)(const char**, CUfunction);
typedef CUresult (*KernelGetNameFn)(const char**, CUkernel);

/* The stand-in's functions, found once when this library is loaded. */
static struct {
  PFN_cuGetProcAddress_v12000 get_proc_address_v2;
  GetProcAddressV1Fn get_proc_address;
  CtxGetDeviceFn ctx_get_device;
  MemGetInfoFn mem_get_info;
  FuncGetNameFn func_get_name;
  KernelGetNameFn kernel_get_name;
} fake;

/* ------------------------------------------------------------------------ cheap memory */

enum { kSlots = 64, kSlotBytes = 64 << 10 };
static unsigned char g_arena[kSlots][kSlotBytes] __attribute__((aligned(4096)));
static int g_free_slots[kSlots]; /* a stack of free slot numbers */
static int g_free_count;
static unsigned char g_in_use[kSlots];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult cheap_alloc(CUdeviceptr* dptr, size_t bytesize) {
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize > kSlotBytes) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_lock);
  if (g_free_count == 0) {
    pthread_mutex_unlock(&g_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  int slot = g_free_slots[--g_free_count];
  g_in_use[slot] = 1;
  pthread_mutex_unlock(&g_lock);
  *dptr = (CUdeviceptr)(uintptr_t)g_arena[slot];
  return CUDA_SUCCESS;
}

/* Freeing 0 succeeds, as on an H100; anything but a live slot's address is refused. */
static CUresult cheap_free(CUdeviceptr dptr) {
  if (dptr == 0) return CUDA_SUCCESS;
  uintptr_t base = (uintptr_t)g_arena;
  if (dptr < base || dptr >= base + sizeof g_arena || (dptr - base) % kSlotBytes != 0)
    return CUDA_ERROR_INVALID_VALUE;
  int slot = (int)((dptr - base) / kSlotBytes);
  pthread_mutex_lock(&g_lock);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (g_in_use[slot]) {
    g_in_use[slot] = 0;
    g_free_slots[g_free_count++] = slot;
    r = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

static CUresult cheap_mem_alloc(CUdeviceptr* dptr, size_t bytesize) {
  return cheap_alloc(dptr, bytesize);
}

static CUresult cheap_mem_free(CUdeviceptr dptr) {
  return cheap_free(dptr);
}

/* Stream order is the order of the calls, as in the stand-in; the stream is not checked. */
static CUresult cheap_mem_alloc_async(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  (void)stream;
  return cheap_alloc(dptr, bytesize);
}

static CUresult cheap_mem_free_async(CUdeviceptr dptr, CUstream stream) {
  (void)stream;
  return cheap_free(dptr);
}

/* ---------------------------------------------------------------------------- loading */

/* The stand-in beside this library's directory (cheap_cuda/../../fake_cuda/lib), or null. */
static void* load_beside_me(void) {
  Dl_info me;
  if (!dladdr((void*)load_beside_me, &me) || !me.dli_fname) return NULL;
  const char* slash = strrchr(me.dli_fname, '/');
  if (!slash) return NULL;
  char path[4096];
  int n = snprintf(path, sizeof path, "%.*s/../../fake_cuda/lib/libcuda.so.1",
                   (int)(slash - me.dli_fname), me.dli_fname);
  if (n < 0 || (size_t)n >= sizeof path) return NULL;
  return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

__attribute__((constructor)) static void load_fake_driver(void) {
  for (int i = 0; i < kSlots; i++) g_free_slots[i] = kSlots - 1 - i;
  g_free_count = kSlots;
  DlsymFn libc_dlsym = (DlsymFn)dlsym(RTLD_NEXT, "dlsym");
  void* lib = load_beside_me();
  if (!lib) lib = dlopen(FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  if (!libc_dlsym || !lib) {
    fprintf(stderr, "memtap_bench_cheap_cuda: cannot load %s: %s\n", FAKE_CUDA_DRIVER,
            lib ? "no dlsym" : dlerror());
    return;
  }
  fake.get_proc_address_v2 = (PFN_cuGetProcAddress_v12000)libc_dlsym(lib, "cuGetProcAddress_v2");
  fake.get_proc_address = (GetProcAddressV1Fn)libc_dlsym(lib, "cuGetProcAddress");
  fake.ctx_get_device = (CtxGetDeviceFn)libc_dlsym(lib, "cuCtxGetDevice");
  fake.mem_get_info = (MemGetInfoFn)libc_dlsym(lib, "cuMemGetInfo_v2");
  fake.func_get_name = (FuncGetNameFn)libc_dlsym(lib, "cuFuncGetName");
  fake.kernel_get_name = (KernelGetNameFn)libc_dlsym(lib, "cuKernelGetName");
}

/* ---------------------------------------------------------------------------- lookups */

EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult* status);
EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);

/* This library's answer to a lookup, or NULL for the stand-in's. */
static void* own_function(const char* symbol, int version) {
  if (strcmp(symbol, "cuMemAlloc") == 0 && version >= 3020) return (void*)cheap_mem_alloc;
  if (strcmp(symbol, "cuMemFree") == 0 && version >= 3020) return (void*)cheap_mem_free;
  if (strcmp(symbol, "cuMemAllocAsync") == 0 && version >= 11020)
    return (void*)cheap_mem_alloc_async;
  if (strcmp(symbol, "cuMemFreeAsync") == 0 && version >= 11020) return (void*)cheap_mem_free_async;
  /* Later lookups through the pointer a lookup of cuGetProcAddress returns come back here. */
  if (strcmp(symbol, "cuGetProcAddress") == 0 && version >= 12000)
    return (void*)cuGetProcAddress_v2;
  if (strcmp(symbol, "cuGetProcAddress") == 0 && version >= 11030) return (void*)cuGetProcAddress;
  return NULL;
}

EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (!fake.get_proc_address_v2) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = fake.get_proc_address_v2(symbol, pfn, cudaVersion, flags, status);
  void* own = r == CUDA_SUCCESS && *pfn ? own_function(symbol, cudaVersion) : NULL;
  if (own) *pfn = own;
  return r;
}

EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                 cuuint64_t flags) {
  if (!fake.get_proc_address) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = fake.get_proc_address(symbol, pfn, cudaVersion, flags);
  void* own = r == CUDA_SUCCESS && *pfn ? own_function(symbol, cudaVersion) : NULL;
  if (own) *pfn = own;
  return r;
}

/* ------------------------------------------------- what memtap's hooks take with dlsym */

EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  return fake.ctx_get_device ? fake.ctx_get_device(device) : CUDA_ERROR_NOT_INITIALIZED;
}

EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  return fake.mem_get_info ? fake.mem_get_info(free_bytes, total_bytes)
                           : CUDA_ERROR_NOT_INITIALIZED;
}

EXPORT CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  return fake.func_get_name ? fake.func_get_name(name, hfunc) : CUDA_ERROR_NOT_INITIALIZED;
}

EXPORT CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  return fake.kernel_get_name ? fake.kernel_get_name(name, hfunc) : CUDA_ERROR_NOT_INITIALIZED;
}
