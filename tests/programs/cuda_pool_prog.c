/* memtap_test_cuda_pool: a CUDA program with known behaviour, for the tests of memtap's CUDA
 * hooks on machines without a GPU (it runs against the stand-ins of tests/fake_cuda/). It
 * binds the runtime by symbol, as PyTorch does, and reaches the driver only as PyTorch
 * (cudaGetDriverEntryPointByVersion, version 12000) and Triton (dlopen("libcuda.so.1") and
 * dlsym) do. Its kernels are host functions that the runtime names with dladdr, so it is
 * linked with -rdynamic.
 *
 * Usage: memtap_test_cuda_pool SCENARIO...  (run in the order given; exit 2 on a bad name)
 *   basic        cudaMalloc (1 MiB, 4096, 100 bytes), cudaMallocPitch, cudaMalloc3D,
 *                cudaMallocManaged, cuMemAlloc_v2 through an entry point (2 MiB) and through
 *                dlsym (3 MiB), each freed; cudaFree(NULL)
 *   async        cudaMallocAsync/cudaFreeAsync on two created streams and the default stream,
 *                cudaMallocFromPoolAsync from the default pool and from a created pool
 *   pinned       cudaMallocHost, cudaHostAlloc, cudaFreeHost; cuMemHostAlloc,
 *                cuMemAllocHost_v2, cuMemFreeHost through entry points
 *   vmm          an expandable segment as PyTorch builds one: reserve 64 MiB, map 2 MiB then
 *                4 MiB (cuMemCreate, cuMemMap, cuMemSetAccess), unmap and release both, free
 *                the reservation
 *   launch       kernel launches: cudaLaunchKernel, __cudaLaunchKernel and
 *                __cudaLaunchKernel_ptsz (with the cudaKernel_t of __cudaGetKernel, as CUDA
 *                13's <<<>>> does), cudaLaunchKernelExC; and Triton's way: cuModuleLoadData,
 *                cuModuleGetFunction("_Z13triton_kernelPf"), cuLaunchKernel and
 *                cuLaunchKernelEx from dlsym; on the default stream and two created streams
 *   oom          with 3 x 64 MiB live, cudaMalloc, cuMemAlloc_v2 (entry point) and
 *                cudaMallocAsync of (free memory + 1 MiB) fail with out-of-memory; then a
 *                1 MiB cudaMalloc succeeds
 *   pool         a miniature caching allocator: 2 MiB segments from cudaMalloc, blocks carved
 *                from them, a freed block reused without a new cudaMalloc, and an expandable
 *                segment (virtual memory) that grows by 2 MiB pages and shrinks; it tells
 *                memtap nothing of its blocks
 *   caching      the same allocator reporting its blocks and figures to memtap as
 *                memtap.torch does for PyTorch (the memtap_pool_* C ABI, found with dlsym;
 *                without the agent it only prints): blocks on the default stream and a
 *                created one, a block used on a second stream whose free completes only
 *                after that stream synchronised and another block was allocated, a freed
 *                block reused, a 5 MiB block in a segment of its own, an expandable segment
 *                that grows and shrinks, and with 15 blocks allocated an out-of-memory in the
 *                pool's cudaMalloc of a new segment
 *   two_devices  allocations on devices 0 and 1 (cudaSetDevice), a launch and an async
 *                allocation on device 1, the device-1 block freed while device 0 is current;
 *                needs MEMTAP_FAKE_CUDA_DEVICES=2 (fails otherwise)
 *   caching_threads
 *                the reporting allocator shared by 4 threads under one lock: blocks one
 *                thread frees are another's next, and frees pending on another stream
 *                completed by the next allocation, on whichever thread that is
 *   caching_two_devices
 *                the reporting allocator on device 1: blocks on a stream and the default
 *                one, a free completed after a device synchronisation; needs two devices
 *   fork         allocates, forks; the child allocates and frees, and exits 0; the parent
 *                waits and frees
 *   threads      4 threads, each 3 cudaMalloc, 2 launches, 3 cudaFree
 *   all          basic async pinned vmm launch oom pool caching caching_threads threads fork, then
 *                two_devices and caching_two_devices if there are two devices (else a
 *                "did skip" line for each)
 *
 * Output (stdout), one line per fact, flushed line by line: an allocation's after the call
 * returned, a free's just before the call (so that when another thread gets the same address
 * back, the free's line comes first, as memtap orders the two records). Lines of different
 * threads interleave in no fixed order; a thread's own lines are in its order.
 *   expect EVENT key=value ...   what memtap must record, named as in common/wire.capnp
 *   did FACT key=value ...       what the program did that memtap does not record
 * Every line ends with pid=<getpid> tid=<gettid>. Addresses and streams are 0x-prefixed
 * lowercase hex (the default stream is 0x0), sizes decimal bytes. The EVENT lines:
 *   expect deviceMalloc api=A device=D size_bytes=S addr=P [stream=T] [via=V] [pitch=..
 *          width=.. height=.. [depth=..]]
 *   expect deviceFree api=A device=D addr=P [size_bytes=S] [stream=T] [via=V]
 *   expect pinnedMalloc api=A device=D size_bytes=S addr=P [via=V]
 *   expect pinnedFree api=A device=D addr=P [via=V]
 *   expect kernelLaunch api=A name=N device=D stream=T [via=V]
 *   expect deviceOom api=A device=D size_bytes=S [stream=T] [via=V]
 *   expect poolMalloc device=D size_bytes=S addr=P stream=T
 *   expect poolFree device=D addr=P size_bytes=S pending=0|1 stream=T
 *   expect poolFreeCompleted device=D addr=P size_bytes=S stream=T
 *   expect poolState device=D allocated_bytes=A reserved_bytes=R
 *   expect oomTopAlloc device=D rank=N size_bytes=S addr=P
 * where A is the API the program called (cudaMalloc, cuMemAlloc_v2, cuMemMap, cuMemUnmap,
 * cudaLaunchKernel, __cudaLaunchKernel, ...), D the device of the block (a free's: the
 * block's, whatever device is current), V how a driver function was obtained (entry_point:
 * cudaGetDriverEntryPointByVersion; dlsym: on a dlopen'ed libcuda.so.1), and N the kernel's
 * name as the driver has it (a C host function's plain name; Triton's mangled name). A
 * virtual-memory mapping is a deviceMalloc api=cuMemMap (size_bytes: the mapping) and its
 * unmapping a deviceFree api=cuMemUnmap with the same addr and size_bytes.
 *
 * The pool lines are a reporting pool's (caching, caching_two_devices), layer PTA, beside the
 * deviceMalloc/deviceFree lines of its segments (HAL; a segment is never also a pool block).
 * poolMalloc: a block handed out (S: the block's size, T: its stream). poolFree: its free
 * requested (Allocated drops); pending=1 when the pool takes it back only later, with a
 * poolFreeCompleted line then (Active drops); pending=0 when it is taken back at once, which
 * memtap folds into the poolFree (no poolFreeCompleted line). poolState: after every segment
 * obtained or released (a page mapped or unmapped too): A the bytes of the blocks allocated,
 * R of the segments. oomTopAlloc: after a deviceOom on a device with pool blocks, the pool's
 * allocated blocks, largest first (rank 1), at most 10: memtap's OOM_TOP_ALLOC rows.
 *
 * Every CUDA call is checked; an unexpected result ends the program with exit status 1 and
 * a message on stderr naming the call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/fake_cuda/fake_cuda_api.h"

#define MIB ((size_t)1 << 20)

/* ------------------------------------------------------------------------------ output */

static void print_line(const char* prefix, const char* fmt, va_list ap) {
  char line[1024];
  int n = snprintf(line, sizeof line, "%s ", prefix);
  n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  snprintf(line + n, sizeof line - (size_t)n, " pid=%d tid=%ld\n", (int)getpid(),
           (long)syscall(SYS_gettid));
  fputs(line, stdout);
  fflush(stdout);
}

__attribute__((format(printf, 1, 2))) static void expect(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  print_line("expect", fmt, ap);
  va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void did(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  print_line("did", fmt, ap);
  va_end(ap);
}

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("memtap_test_cuda_pool: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static unsigned long long hex(const void* p) {
  return (unsigned long long)(uintptr_t)p;
}

/* ----------------------------------------------------------------------- checked calls */

static void check_rt(cudaError_t got, cudaError_t want, const char* call, int line) {
  if (got != want)
    fail("line %d: %s returned %d (%s), expected %d (%s)", line, call, (int)got,
         cudaGetErrorName(got), (int)want, cudaGetErrorName(want));
}
static void check_cu(CUresult got, CUresult want, const char* call, int line) {
  if (got != want) fail("line %d: %s returned %d, expected %d", line, call, (int)got, (int)want);
}
#define RT(call) check_rt((call), cudaSuccess, #call, __LINE__)
#define RT_FAILS(call, want) check_rt((call), (want), #call, __LINE__)
#define CU(call) check_cu((call), CUDA_SUCCESS, #call, __LINE__)
#define CU_FAILS(call, want) check_cu((call), (want), #call, __LINE__)

static int current_device(void) {
  int device = -1;
  RT(cudaGetDevice(&device));
  return device;
}

/* The driver as PyTorch reaches it: cudaGetDriverEntryPointByVersion, version 12000. */
static struct {
  PFN_cuMemAlloc_v3020 mem_alloc;
  PFN_cuMemFree_v3020 mem_free;
  PFN_cuMemHostAlloc_v2020 mem_host_alloc;
  PFN_cuMemAllocHost_v3020 mem_alloc_host;
  PFN_cuMemFreeHost_v2000 mem_free_host;
  PFN_cuMemGetAllocationGranularity_v10020 mem_get_allocation_granularity;
  PFN_cuMemAddressReserve_v10020 mem_address_reserve;
  PFN_cuMemAddressFree_v10020 mem_address_free;
  PFN_cuMemCreate_v10020 mem_create;
  PFN_cuMemRelease_v10020 mem_release;
  PFN_cuMemMap_v10020 mem_map;
  PFN_cuMemUnmap_v10020 mem_unmap;
  PFN_cuMemSetAccess_v10020 mem_set_access;
} drv;

static void* entry_point(const char* symbol) {
  void* fn = NULL;
  enum cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  RT(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || !fn)
    fail("no driver entry point %s (status %d)", symbol, (int)status);
  return fn;
}

static void load_entry_points(void) {
  if (drv.mem_alloc) return;
  drv.mem_alloc = (PFN_cuMemAlloc_v3020)entry_point("cuMemAlloc");
  drv.mem_free = (PFN_cuMemFree_v3020)entry_point("cuMemFree");
  drv.mem_host_alloc = (PFN_cuMemHostAlloc_v2020)entry_point("cuMemHostAlloc");
  drv.mem_alloc_host = (PFN_cuMemAllocHost_v3020)entry_point("cuMemAllocHost");
  drv.mem_free_host = (PFN_cuMemFreeHost_v2000)entry_point("cuMemFreeHost");
  drv.mem_get_allocation_granularity =
      (PFN_cuMemGetAllocationGranularity_v10020)entry_point("cuMemGetAllocationGranularity");
  drv.mem_address_reserve = (PFN_cuMemAddressReserve_v10020)entry_point("cuMemAddressReserve");
  drv.mem_address_free = (PFN_cuMemAddressFree_v10020)entry_point("cuMemAddressFree");
  drv.mem_create = (PFN_cuMemCreate_v10020)entry_point("cuMemCreate");
  drv.mem_release = (PFN_cuMemRelease_v10020)entry_point("cuMemRelease");
  drv.mem_map = (PFN_cuMemMap_v10020)entry_point("cuMemMap");
  drv.mem_unmap = (PFN_cuMemUnmap_v10020)entry_point("cuMemUnmap");
  drv.mem_set_access = (PFN_cuMemSetAccess_v10020)entry_point("cuMemSetAccess");
}

/* The driver as Triton reaches it: its own handle of libcuda.so.1 and dlsym. */
static void* triton_symbol(const char* name) {
  static void* lib;
  if (!lib && !(lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)))
    fail("dlopen libcuda.so.1: %s", dlerror());
  void* fn = dlsym(lib, name);
  if (!fn) fail("dlsym %s: %s", name, dlerror());
  return fn;
}

/* ------------------------------------------------------------------ runtime allocations */

static void* rt_malloc(size_t size) {
  void* p = NULL;
  RT(cudaMalloc(&p, size));
  expect("deviceMalloc api=cudaMalloc device=%d size_bytes=%zu addr=0x%llx", current_device(), size,
         hex(p));
  return p;
}

/* device: the block's (cudaMalloc'd on it). */
static void rt_free(void* p, int device) {
  expect("deviceFree api=cudaFree device=%d addr=0x%llx", device, hex(p));
  RT(cudaFree(p));
}

/* ------------------------------------------------- an expandable segment (virtual memory) */

struct expandable {
  int device;
  CUdeviceptr base;
  size_t reserved;
  size_t mapped;
  int pages;
  size_t page_size[16];
  CUmemGenericAllocationHandle handle[16];
};

static CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

static void expandable_reserve(struct expandable* seg, size_t size) {
  load_entry_points();
  memset(seg, 0, sizeof *seg);
  seg->device = current_device();
  CUmemAllocationProp prop = device_prop(seg->device);
  size_t granularity = 0;
  CU(drv.mem_get_allocation_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  if (granularity != 2 * MIB) fail("granularity %zu, expected 2 MiB", granularity);
  CU(drv.mem_address_reserve(&seg->base, size, 0, 0, 0));
  seg->reserved = size;
  did("vmm_reserve api=cuMemAddressReserve device=%d addr=0x%llx size_bytes=%zu", seg->device,
      seg->base, size);
}

/* Maps one more page of `size` bytes (a multiple of 2 MiB) at the end of the mapped part. */
static void expandable_grow(struct expandable* seg, size_t size) {
  if (seg->pages == 16 || seg->mapped + size > seg->reserved) fail("expandable segment full");
  CUmemAllocationProp prop = device_prop(seg->device);
  CUmemGenericAllocationHandle handle = 0;
  CU(drv.mem_create(&handle, size, &prop, 0));
  did("vmm_create api=cuMemCreate device=%d handle=0x%llx size_bytes=%zu", seg->device, handle,
      size);
  CUdeviceptr at = seg->base + seg->mapped;
  CU(drv.mem_map(at, size, 0, handle, 0));
  expect("deviceMalloc api=cuMemMap device=%d size_bytes=%zu addr=0x%llx via=entry_point",
         seg->device, size, at);
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU(drv.mem_set_access(at, size, &access, 1));
  did("vmm_set_access api=cuMemSetAccess device=%d addr=0x%llx size_bytes=%zu", seg->device, at,
      size);
  seg->handle[seg->pages] = handle;
  seg->page_size[seg->pages++] = size;
  seg->mapped += size;
}

/* Unmaps and releases the last page. */
static void expandable_shrink(struct expandable* seg) {
  if (seg->pages == 0) fail("expandable segment empty");
  size_t size = seg->page_size[--seg->pages];
  CUdeviceptr at = seg->base + seg->mapped - size;
  expect("deviceFree api=cuMemUnmap device=%d addr=0x%llx size_bytes=%zu via=entry_point",
         seg->device, at, size);
  CU(drv.mem_unmap(at, size));
  CU(drv.mem_release(seg->handle[seg->pages]));
  did("vmm_release api=cuMemRelease device=%d handle=0x%llx", seg->device, seg->handle[seg->pages]);
  seg->mapped -= size;
}

static void expandable_free(struct expandable* seg) {
  while (seg->pages > 0) expandable_shrink(seg);
  CU(drv.mem_address_free(seg->base, seg->reserved));
  did("vmm_address_free api=cuMemAddressFree device=%d addr=0x%llx size_bytes=%zu", seg->device,
      seg->base, seg->reserved);
}

/* ----------------------------------------------------------------------------- kernels */

/* The kernels' host functions: the runtime finds their names with dladdr. They are never run,
 * and their bodies differ so that the compiler cannot fold them into one. */
volatile int kernel_side_effect;
__attribute__((noinline)) void fake_add_kernel(float* a, int n) {
  kernel_side_effect += n + (a != NULL);
}
__attribute__((noinline)) void fake_scale_kernel(float* a, float s) {
  kernel_side_effect -= (int)s + (a != NULL);
}

static const dim3 kGrid = {4, 1, 1};
static const dim3 kBlock = {128, 1, 1};

static void launch_add(float* buf, cudaStream_t stream) {
  int n = 1024;
  void* args[] = {&buf, &n};
  RT(cudaLaunchKernel((const void*)fake_add_kernel, kGrid, kBlock, args, 0, stream));
  expect("kernelLaunch api=cudaLaunchKernel name=fake_add_kernel device=%d stream=0x%llx",
         current_device(), hex(stream));
}

/* ---------------------------------------------------------------------------- scenarios */

static void scenario_basic(void) {
  int device = current_device();
  void* a = rt_malloc(MIB);
  void* b = rt_malloc(4096);
  void* c = rt_malloc(100);

  void* pitched = NULL;
  size_t pitch = 0;
  RT(cudaMallocPitch(&pitched, &pitch, 1000, 16));
  expect(
      "deviceMalloc api=cudaMallocPitch device=%d size_bytes=%zu addr=0x%llx pitch=%zu "
      "width=1000 height=16",
      device, pitch * 16, hex(pitched), pitch);

  struct cudaPitchedPtr cube;
  struct cudaExtent extent = {256, 8, 4};
  RT(cudaMalloc3D(&cube, extent));
  expect(
      "deviceMalloc api=cudaMalloc3D device=%d size_bytes=%zu addr=0x%llx pitch=%zu "
      "width=256 height=8 depth=4",
      device, cube.pitch * 8 * 4, hex(cube.ptr), cube.pitch);

  void* managed = NULL;
  RT(cudaMallocManaged(&managed, 65536, cudaMemAttachGlobal));
  expect("deviceMalloc api=cudaMallocManaged device=%d size_bytes=65536 addr=0x%llx", device,
         hex(managed));

  load_entry_points();
  CUdeviceptr d1 = 0;
  CU(drv.mem_alloc(&d1, 2 * MIB));
  expect("deviceMalloc api=cuMemAlloc_v2 device=%d size_bytes=%zu addr=0x%llx via=entry_point",
         device, 2 * MIB, d1);
  expect("deviceFree api=cuMemFree_v2 device=%d addr=0x%llx via=entry_point", device, d1);
  CU(drv.mem_free(d1));

  PFN_cuMemAlloc_v3020 dl_alloc = (PFN_cuMemAlloc_v3020)triton_symbol("cuMemAlloc_v2");
  PFN_cuMemFree_v3020 dl_free = (PFN_cuMemFree_v3020)triton_symbol("cuMemFree_v2");
  CUdeviceptr d2 = 0;
  CU(dl_alloc(&d2, 3 * MIB));
  expect("deviceMalloc api=cuMemAlloc_v2 device=%d size_bytes=%zu addr=0x%llx via=dlsym", device,
         3 * MIB, d2);
  expect("deviceFree api=cuMemFree_v2 device=%d addr=0x%llx via=dlsym", device, d2);
  CU(dl_free(d2));

  RT(cudaFree(NULL));
  did("free_null api=cudaFree");
  rt_free(managed, device);
  rt_free(cube.ptr, device);
  rt_free(pitched, device);
  rt_free(c, device);
  rt_free(b, device);
  rt_free(a, device);
}

static cudaStream_t create_stream(void) {
  cudaStream_t s = NULL;
  RT(cudaStreamCreate(&s));
  did("stream_create api=cudaStreamCreate device=%d stream=0x%llx", current_device(), hex(s));
  return s;
}

static void destroy_stream(cudaStream_t s) {
  RT(cudaStreamSynchronize(s));
  RT(cudaStreamDestroy(s));
  did("stream_destroy api=cudaStreamDestroy stream=0x%llx", hex(s));
}

static void* malloc_async(const char* api, size_t size, cudaMemPool_t pool, cudaStream_t s) {
  void* p = NULL;
  if (pool)
    RT(cudaMallocFromPoolAsync(&p, size, pool, s));
  else
    RT(cudaMallocAsync(&p, size, s));
  expect("deviceMalloc api=%s device=%d size_bytes=%zu addr=0x%llx stream=0x%llx", api,
         current_device(), size, hex(p), hex(s));
  return p;
}

static void free_async(void* p, cudaStream_t s) {
  expect("deviceFree api=cudaFreeAsync device=%d addr=0x%llx stream=0x%llx", current_device(),
         hex(p), hex(s));
  RT(cudaFreeAsync(p, s));
}

static void scenario_async(void) {
  cudaStream_t s1 = create_stream(), s2 = create_stream();
  void* a = malloc_async("cudaMallocAsync", 262144, NULL, s1);
  void* b = malloc_async("cudaMallocAsync", MIB, NULL, s2);
  void* c = malloc_async("cudaMallocAsync", 65536, NULL, 0);
  free_async(a, s1);
  free_async(b, s2);
  free_async(c, 0);

  cudaMemPool_t default_pool = NULL;
  RT(cudaDeviceGetDefaultMemPool(&default_pool, current_device()));
  void* d = malloc_async("cudaMallocFromPoolAsync", 131072, default_pool, s1);
  free_async(d, s1);

  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = current_device();
  cudaMemPool_t pool = NULL;
  RT(cudaMemPoolCreate(&pool, &props));
  did("pool_create api=cudaMemPoolCreate pool=0x%llx", hex(pool));
  void* e = malloc_async("cudaMallocFromPoolAsync", 196608, pool, s2);
  free_async(e, s2);
  RT(cudaStreamSynchronize(s2));
  RT(cudaMemPoolDestroy(pool));
  did("pool_destroy api=cudaMemPoolDestroy pool=0x%llx", hex(pool));

  destroy_stream(s1);
  destroy_stream(s2);
}

static void scenario_pinned(void) {
  int device = current_device();
  void* a = NULL;
  RT(cudaMallocHost(&a, 65536));
  expect("pinnedMalloc api=cudaMallocHost device=%d size_bytes=65536 addr=0x%llx", device, hex(a));
  void* b = NULL;
  RT(cudaHostAlloc(&b, 131072, cudaHostAllocPortable));
  expect("pinnedMalloc api=cudaHostAlloc device=%d size_bytes=131072 addr=0x%llx", device, hex(b));
  expect("pinnedFree api=cudaFreeHost device=%d addr=0x%llx", device, hex(a));
  RT(cudaFreeHost(a));
  expect("pinnedFree api=cudaFreeHost device=%d addr=0x%llx", device, hex(b));
  RT(cudaFreeHost(b));

  load_entry_points();
  void* c = NULL;
  CU(drv.mem_host_alloc(&c, 262144, CU_MEMHOSTALLOC_PORTABLE));
  expect("pinnedMalloc api=cuMemHostAlloc device=%d size_bytes=262144 addr=0x%llx via=entry_point",
         device, hex(c));
  void* d = NULL;
  CU(drv.mem_alloc_host(&d, 32768));
  expect(
      "pinnedMalloc api=cuMemAllocHost_v2 device=%d size_bytes=32768 addr=0x%llx "
      "via=entry_point",
      device, hex(d));
  expect("pinnedFree api=cuMemFreeHost device=%d addr=0x%llx via=entry_point", device, hex(c));
  CU(drv.mem_free_host(c));
  expect("pinnedFree api=cuMemFreeHost device=%d addr=0x%llx via=entry_point", device, hex(d));
  CU(drv.mem_free_host(d));
}

static void scenario_vmm(void) {
  struct expandable seg;
  expandable_reserve(&seg, 64 * MIB);
  expandable_grow(&seg, 2 * MIB);
  expandable_grow(&seg, 4 * MIB);
  expandable_shrink(&seg);
  expandable_free(&seg);
}

enum { kLaunches = 2 };

static void scenario_launch(void) {
  int device = current_device();
  cudaStream_t s1 = create_stream(), s2 = create_stream();
  float* buf = rt_malloc(4096);
  int n = 1024;
  float scale = 2.0f;
  void* add_args[] = {&buf, &n};
  void* scale_args[] = {&buf, &scale};

  for (int i = 0; i < kLaunches; i++) launch_add(buf, 0);

  cudaKernel_t kernel = NULL;
  RT(__cudaGetKernel(&kernel, (const void*)fake_add_kernel));
  did("get_kernel api=__cudaGetKernel kernel=0x%llx host=0x%llx", hex(kernel),
      hex((const void*)fake_add_kernel));
  for (int i = 0; i < kLaunches; i++) {
    RT(__cudaLaunchKernel(kernel, kGrid, kBlock, add_args, 0, s1));
    expect("kernelLaunch api=__cudaLaunchKernel name=fake_add_kernel device=%d stream=0x%llx",
           device, hex(s1));
  }
  for (int i = 0; i < kLaunches; i++) {
    RT(__cudaLaunchKernel_ptsz(kernel, kGrid, kBlock, add_args, 0, s2));
    expect(
        "kernelLaunch api=__cudaLaunchKernel_ptsz name=fake_add_kernel device=%d "
        "stream=0x%llx",
        device, hex(s2));
  }
  cudaLaunchConfig_t config;
  memset(&config, 0, sizeof config);
  config.gridDim = kGrid;
  config.blockDim = kBlock;
  config.stream = s2;
  for (int i = 0; i < kLaunches; i++) {
    RT(cudaLaunchKernelExC(&config, (const void*)fake_scale_kernel, scale_args));
    expect("kernelLaunch api=cudaLaunchKernelExC name=fake_scale_kernel device=%d stream=0x%llx",
           device, hex(s2));
  }

  PFN_cuModuleLoadData_v2000 module_load_data =
      (PFN_cuModuleLoadData_v2000)triton_symbol("cuModuleLoadData");
  PFN_cuModuleGetFunction_v2000 module_get_function =
      (PFN_cuModuleGetFunction_v2000)triton_symbol("cuModuleGetFunction");
  PFN_cuLaunchKernel_v4000 launch_kernel =
      (PFN_cuLaunchKernel_v4000)triton_symbol("cuLaunchKernel");
  PFN_cuLaunchKernelEx_v11060 launch_kernel_ex =
      (PFN_cuLaunchKernelEx_v11060)triton_symbol("cuLaunchKernelEx");
  static const char cubin[] = "triton cubin";
  CUmodule module = NULL;
  CU(module_load_data(&module, cubin));
  CUfunction function = NULL;
  CU(module_get_function(&function, module, "_Z13triton_kernelPf"));
  did("module_load api=cuModuleLoadData module=0x%llx function=0x%llx", hex(module), hex(function));
  void* triton_args[] = {&buf};
  cudaStream_t streams[] = {s1, s2};
  for (int s = 0; s < 2; s++) {
    for (int i = 0; i < kLaunches; i++) {
      CU(launch_kernel(function, 4, 1, 1, 128, 1, 1, 0, streams[s], triton_args, NULL));
      expect(
          "kernelLaunch api=cuLaunchKernel name=_Z13triton_kernelPf device=%d stream=0x%llx "
          "via=dlsym",
          device, hex(streams[s]));
    }
  }
  CUlaunchConfig ex;
  memset(&ex, 0, sizeof ex);
  ex.gridDimX = ex.gridDimY = ex.gridDimZ = 1;
  ex.blockDimX = 64;
  ex.blockDimY = ex.blockDimZ = 1;
  ex.hStream = s1;
  CU(launch_kernel_ex(&ex, function, triton_args, NULL));
  expect(
      "kernelLaunch api=cuLaunchKernelEx name=_Z13triton_kernelPf device=%d stream=0x%llx "
      "via=dlsym",
      device, hex(s1));

  RT(cudaDeviceSynchronize());
  destroy_stream(s1);
  destroy_stream(s2);
  rt_free(buf, device);
}

static void scenario_oom(void) {
  int device = current_device();
  void* live[3];
  for (int i = 0; i < 3; i++) live[i] = rt_malloc(64 * MIB);
  size_t free_bytes = 0, total_bytes = 0;
  RT(cudaMemGetInfo(&free_bytes, &total_bytes));
  did("meminfo api=cudaMemGetInfo device=%d free_bytes=%zu total_bytes=%zu", device, free_bytes,
      total_bytes);
  size_t too_much = free_bytes + MIB;

  void* p = NULL;
  RT_FAILS(cudaMalloc(&p, too_much), cudaErrorMemoryAllocation);
  if (p) fail("a failed cudaMalloc set its pointer");
  RT_FAILS(cudaGetLastError(), cudaErrorMemoryAllocation);
  RT(cudaGetLastError());
  expect("deviceOom api=cudaMalloc device=%d size_bytes=%zu", device, too_much);

  load_entry_points();
  CUdeviceptr d = 0;
  CU_FAILS(drv.mem_alloc(&d, too_much), CUDA_ERROR_OUT_OF_MEMORY);
  expect("deviceOom api=cuMemAlloc_v2 device=%d size_bytes=%zu via=entry_point", device, too_much);

  RT_FAILS(cudaMallocAsync(&p, too_much, 0), cudaErrorMemoryAllocation);
  RT_FAILS(cudaGetLastError(), cudaErrorMemoryAllocation);
  expect("deviceOom api=cudaMallocAsync device=%d size_bytes=%zu stream=0x0", device, too_much);

  /* PyTorch's expandable segments run out in cuMemCreate (a physical handle, no address). */
  const size_t too_many_pages = (too_much + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
  CUmemAllocationProp prop = device_prop(device);
  CUmemGenericAllocationHandle handle = 0;
  CU_FAILS(drv.mem_create(&handle, too_many_pages, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  expect("deviceOom api=cuMemCreate device=%d size_bytes=%zu via=entry_point", device,
         too_many_pages);

  void* after = rt_malloc(MIB);
  rt_free(after, device);
  for (int i = 0; i < 3; i++) rt_free(live[i], device);
}

/* The miniature caching allocator: blocks carved in order from 2 MiB segments that come from
 * cudaMalloc (a block larger than that gets a segment of its own, rounded up to 2 MiB), a freed
 * block kept for the next request on its stream that fits it (no cudaMalloc then), and one
 * expandable segment that maps 2 MiB pages as its blocks need them. As in PyTorch's, a segment
 * serves one stream, and a block used on another stream too is freed in two steps: its owner
 * frees it (free requested: it is no longer allocated), and the pool takes it back once that
 * stream is done (free completed: it can be handed out again). Blocks are rounded to 512 bytes
 * and never split or merged.
 *
 * With `report` set (scenarios caching and caching_two_devices) the pool tells memtap about
 * its blocks as memtap.torch's trace tracker does for PyTorch, through the memtap_pool_* C ABI
 * (agent/memtap.h) when the agent is there, and prints what memtap must record of them. The
 * pool scenario leaves it unset: a pool that reports nothing, whose memory memtap knows only
 * as the driver's (HAL). */
enum { kSegmentSize = 2 << 20, kMaxSegments = 8, kMaxBlocks = 64 };

struct pool_block {
  uintptr_t addr;
  size_t size;
  int segment; /* -1: the expandable segment */
  int free;    /* its free was requested: no longer allocated */
  int pending; /* ... and not completed yet: still in use on another stream */
  cudaStream_t stream;
};

static struct {
  int report;
  int device;
  uintptr_t segment_base[kMaxSegments]; /* 0: released */
  size_t segment_size[kMaxSegments];
  size_t segment_used[kMaxSegments];
  cudaStream_t segment_stream[kMaxSegments];
  int segment_own[kMaxSegments]; /* holds one large block: nothing else is carved from it */
  int segments;
  struct pool_block blocks[kMaxBlocks];
  int blocks_used;
  struct expandable expandable;
  size_t expandable_used;
} pool;

/* memtap's agent's pool C ABI (agent/memtap.h), looked up at start with dlsym: all NULL
 * without the agent, and then a reporting pool only prints. */
static struct {
  void (*alloc)(int device, uint64_t addr, uint64_t size, uint64_t stream);
  void (*free_requested)(int device, uint64_t addr, uint64_t stream);
  void (*free_completed)(int device, uint64_t addr, uint64_t stream);
  void (*state)(int device, uint64_t allocated_bytes, uint64_t reserved_bytes);
  /* Owner labels apply to pool blocks as to host ones: the pool reports on the allocating
   * thread, inside its owner. */
  uint32_t (*intern)(const char* text, size_t length);
  void (*owner_push)(uint32_t name_id);
  void (*owner_pop)(void);
} memtap_pool;

static void find_memtap_pool(void) {
  *(void**)&memtap_pool.alloc = dlsym(RTLD_DEFAULT, "memtap_pool_alloc");
  *(void**)&memtap_pool.free_requested = dlsym(RTLD_DEFAULT, "memtap_pool_free_requested");
  *(void**)&memtap_pool.free_completed = dlsym(RTLD_DEFAULT, "memtap_pool_free_completed");
  *(void**)&memtap_pool.state = dlsym(RTLD_DEFAULT, "memtap_pool_state");
  *(void**)&memtap_pool.intern = dlsym(RTLD_DEFAULT, "memtap_intern");
  *(void**)&memtap_pool.owner_push = dlsym(RTLD_DEFAULT, "memtap_owner_push");
  *(void**)&memtap_pool.owner_pop = dlsym(RTLD_DEFAULT, "memtap_owner_pop");
}

static void owner_push(const char* name) {
  if (memtap_pool.owner_push) memtap_pool.owner_push(memtap_pool.intern(name, strlen(name)));
  did("owner_push name=%s", name);
}

static void owner_pop(void) {
  if (memtap_pool.owner_pop) memtap_pool.owner_pop();
  did("owner_pop");
}

/* A reporting pool on the current device, empty. */
static void pool_start_reporting(void) {
  memset(&pool, 0, sizeof pool);
  pool.report = 1;
  pool.device = current_device();
  did("pool_report device=%d memtap=%d", pool.device, memtap_pool.alloc != NULL);
}

/* What the pool holds now: the bytes of the blocks handed out and not freed, and of its
 * segments (the expandable one's mapped pages). After every segment obtained or released. */
static void pool_report_state(void) {
  if (!pool.report) return;
  size_t allocated = 0, reserved = pool.expandable.mapped;
  for (int i = 0; i < pool.blocks_used; i++)
    if (!pool.blocks[i].free) allocated += pool.blocks[i].size;
  for (int s = 0; s < pool.segments; s++)
    if (pool.segment_base[s]) reserved += pool.segment_size[s];
  if (memtap_pool.state) memtap_pool.state(pool.device, allocated, reserved);
  expect("poolState device=%d allocated_bytes=%zu reserved_bytes=%zu", pool.device, allocated,
         reserved);
}

/* A block handed out: the pool's block, whatever was asked for (as PyTorch's trace says). */
static struct pool_block* pool_report_alloc(struct pool_block* b) {
  if (!pool.report) return b;
  if (memtap_pool.alloc) memtap_pool.alloc(pool.device, b->addr, b->size, hex(b->stream));
  expect("poolMalloc device=%d size_bytes=%zu addr=0x%llx stream=0x%llx", pool.device, b->size,
         (unsigned long long)b->addr, hex(b->stream));
  return b;
}

static struct pool_block* pool_new_block(uintptr_t addr, size_t size, int segment,
                                         cudaStream_t stream) {
  if (pool.blocks_used == kMaxBlocks) fail("pool: too many blocks");
  struct pool_block* b = &pool.blocks[pool.blocks_used++];
  *b = (struct pool_block){addr, size, segment, 0, 0, stream};
  did("block_alloc addr=0x%llx size_bytes=%zu segment=%d", (unsigned long long)addr, size, segment);
  return b;
}

/* A segment of `size` bytes from cudaMalloc; -1 when the device is out of memory. */
static int pool_new_segment(size_t size, cudaStream_t stream, int own) {
  if (pool.segments == kMaxSegments) fail("pool: too many segments");
  void* p = NULL;
  cudaError_t r = cudaMalloc(&p, size);
  if (r == cudaErrorMemoryAllocation) {
    RT_FAILS(cudaGetLastError(), cudaErrorMemoryAllocation);
    RT(cudaGetLastError());
    expect("deviceOom api=cudaMalloc device=%d size_bytes=%zu", current_device(), size);
    return -1;
  }
  RT(r);
  expect("deviceMalloc api=cudaMalloc device=%d size_bytes=%zu addr=0x%llx", current_device(), size,
         hex(p));
  int s = pool.segments++;
  pool.segment_base[s] = (uintptr_t)p;
  pool.segment_size[s] = size;
  pool.segment_used[s] = 0;
  pool.segment_stream[s] = stream;
  pool.segment_own[s] = own;
  did("segment_alloc segment=%d addr=0x%llx size_bytes=%zu", s, hex(p), size);
  pool_report_state();
  return s;
}

static struct pool_block* pool_carve(int s, size_t size) {
  struct pool_block* b =
      pool_new_block(pool.segment_base[s] + pool.segment_used[s], size, s, pool.segment_stream[s]);
  pool.segment_used[s] += size;
  return b;
}

/* A block for `stream`, or NULL when the segment it needs cannot be had (out of memory). */
static struct pool_block* pool_try_alloc(size_t size, cudaStream_t stream) {
  size = (size + 511) / 512 * 512;
  if (size > kSegmentSize) {
    int s = pool_new_segment((size + kSegmentSize - 1) / kSegmentSize * kSegmentSize, stream, 1);
    return s < 0 ? NULL : pool_report_alloc(pool_carve(s, size));
  }
  struct pool_block* best = NULL;
  for (int i = 0; i < pool.blocks_used; i++) {
    struct pool_block* b = &pool.blocks[i];
    if (b->free && !b->pending && b->segment >= 0 && b->stream == stream && b->size >= size &&
        (!best || b->size < best->size))
      best = b;
  }
  if (best) {
    best->free = 0;
    did("block_reuse addr=0x%llx size_bytes=%zu segment=%d", (unsigned long long)best->addr,
        best->size, best->segment);
    return pool_report_alloc(best);
  }
  for (int s = 0; s < pool.segments; s++) {
    if (!pool.segment_base[s] || pool.segment_own[s] || pool.segment_stream[s] != stream ||
        pool.segment_used[s] + size > pool.segment_size[s])
      continue;
    return pool_report_alloc(pool_carve(s, size));
  }
  int s = pool_new_segment(kSegmentSize, stream, 0);
  return s < 0 ? NULL : pool_report_alloc(pool_carve(s, size));
}

static struct pool_block* pool_alloc(size_t size, cudaStream_t stream) {
  struct pool_block* b = pool_try_alloc(size, stream);
  if (!b) fail("pool: out of memory for %zu bytes", size);
  return b;
}

static struct pool_block* pool_alloc_expandable(size_t size, cudaStream_t stream) {
  size = (size + 511) / 512 * 512;
  struct expandable* seg = &pool.expandable;
  if (seg->reserved == 0) expandable_reserve(seg, 64 * MIB);
  while (pool.expandable_used + size > seg->mapped) {
    expandable_grow(seg, 2 * MIB);
    pool_report_state();
  }
  struct pool_block* b = pool_new_block(seg->base + pool.expandable_used, size, -1, stream);
  pool.expandable_used += size;
  return pool_report_alloc(b);
}

/* Its owner frees the block; `pending`: the pool takes it back only later
 * (pool_free_completed), once the other stream that used it is done. */
static void pool_free_requested(struct pool_block* b, int pending) {
  if (b->free) fail("pool: block 0x%llx freed twice", (unsigned long long)b->addr);
  if (pool.report) {
    expect("poolFree device=%d addr=0x%llx size_bytes=%zu pending=%d stream=0x%llx", pool.device,
           (unsigned long long)b->addr, b->size, pending, hex(b->stream));
    if (memtap_pool.free_requested)
      memtap_pool.free_requested(pool.device, b->addr, hex(b->stream));
    /* A free the pool takes back at once tells memtap so within the same call, as
     * PyTorch's free() does: nothing (no line printed) between the two. */
    if (!pending && memtap_pool.free_completed)
      memtap_pool.free_completed(pool.device, b->addr, hex(b->stream));
  }
  b->free = 1;
  b->pending = 1;
  did("block_free addr=0x%llx size_bytes=%zu segment=%d", (unsigned long long)b->addr, b->size,
      b->segment);
}

/* The pool takes the block back (`pending`: later than its request; memtap folds a completion
 * right after its request into the request's row, so only a later one is expected). A block
 * of the expandable segment is freed from the top only: the pages above what is still used
 * are unmapped. */
static void pool_free_completed(struct pool_block* b, int pending) {
  if (!b->pending)
    fail("pool: block 0x%llx completed without a request", (unsigned long long)b->addr);
  if (pool.report) {
    if (pending)
      expect("poolFreeCompleted device=%d addr=0x%llx size_bytes=%zu stream=0x%llx", pool.device,
             (unsigned long long)b->addr, b->size, hex(b->stream));
    if (pending && memtap_pool.free_completed) /* else told with the request */
      memtap_pool.free_completed(pool.device, b->addr, hex(b->stream));
  }
  b->pending = 0;
  if (pending)
    did("block_free_completed addr=0x%llx size_bytes=%zu segment=%d", (unsigned long long)b->addr,
        b->size, b->segment);
  if (b->segment >= 0) return;
  struct expandable* seg = &pool.expandable;
  if (b->addr + b->size != seg->base + pool.expandable_used) fail("pool: not the top block");
  pool.expandable_used -= b->size;
  while (seg->pages > 0 && seg->mapped - seg->page_size[seg->pages - 1] >= pool.expandable_used) {
    expandable_shrink(seg);
    pool_report_state();
  }
}

/* The usual free: requested and completed at once, on the same thread. */
static void pool_free(struct pool_block* b) {
  pool_free_requested(b, 0);
  pool_free_completed(b, 0);
}

static void pool_release_all(void) {
  int device = current_device();
  for (int i = 0; i < pool.blocks_used; i++)
    if (!pool.blocks[i].free || pool.blocks[i].pending) fail("pool: a block is still in use");
  for (int s = 0; s < pool.segments; s++) {
    uintptr_t base = pool.segment_base[s];
    rt_free((void*)base, device);
    pool.segment_base[s] = 0;
    did("segment_free segment=%d addr=0x%llx", s, (unsigned long long)base);
    pool_report_state();
  }
  if (pool.expandable.reserved) expandable_free(&pool.expandable);
  memset(&pool, 0, sizeof pool);
}

/* What memtap lists as an out-of-memory's top allocations when the device has pool blocks:
 * the pool's blocks handed out and not freed, largest first, at most 10. */
static void pool_expect_oom_top(void) {
  const struct pool_block* top[kMaxBlocks];
  int n = 0;
  for (int i = 0; i < pool.blocks_used; i++)
    if (!pool.blocks[i].free) top[n++] = &pool.blocks[i];
  for (int i = 1; i < n; i++) /* insertion sort, by size descending */
    for (int j = i; j > 0 && top[j]->size > top[j - 1]->size; j--) {
      const struct pool_block* t = top[j];
      top[j] = top[j - 1];
      top[j - 1] = t;
    }
  for (int i = 0; i < n && i < 10; i++)
    expect("oomTopAlloc device=%d rank=%d size_bytes=%zu addr=0x%llx", pool.device, i + 1,
           top[i]->size, (unsigned long long)top[i]->addr);
}

static void scenario_pool(void) {
  struct pool_block* a = pool_alloc(MIB, 0);       /* a new segment */
  struct pool_block* b = pool_alloc(MIB / 2, 0);   /* the same segment */
  struct pool_block* c = pool_alloc(768 << 10, 0); /* does not fit: a second segment */
  pool_free(b);
  struct pool_block* d = pool_alloc(500000, 0); /* b's block again, no cudaMalloc */
  if (d != b) fail("pool: the freed block was not reused");
  struct pool_block* e = pool_alloc_expandable(3 * MIB, 0); /* maps two pages */
  struct pool_block* f = pool_alloc_expandable(MIB, 0);     /* fits the mapped pages */
  struct pool_block* g = pool_alloc_expandable(2 * MIB, 0); /* maps a third page */
  pool_free(g);                                             /* unmaps it */
  pool_free(f);
  pool_free(e); /* unmaps both */
  pool_free(d);
  pool_free(c);
  pool_free(a);
  pool_release_all();
}

/* The pool, reporting to memtap, as PyTorch's would: blocks on two streams, a block used on
 * another stream whose free completes only after that stream synchronised (Active > Allocated
 * meanwhile), a freed block reused, a block larger than a segment, an expandable segment that
 * grows and shrinks, and an out-of-memory in the pool's cudaMalloc of a new segment while 15
 * blocks are allocated (memtap's top allocations: the 10 largest). */
static void scenario_caching(void) {
  pool_start_reporting();
  cudaStream_t s1 = create_stream(), s2 = create_stream();
  struct pool_block* a = pool_alloc(MIB, 0);        /* a segment for the default stream */
  struct pool_block* b = pool_alloc(512 << 10, s1); /* another stream: a segment of its own */
  struct pool_block* c = pool_alloc(256 << 10, 0);  /* a's segment */
  did("block_use addr=0x%llx stream=0x%llx", (unsigned long long)c->addr, hex(s2));
  pool_free_requested(c, 1);                       /* s2 may still read it */
  struct pool_block* d = pool_alloc(128 << 10, 0); /* c's block is not back: carved */
  RT(cudaStreamSynchronize(s2));
  did("stream_sync api=cudaStreamSynchronize stream=0x%llx", hex(s2));
  pool_free_completed(c, 1);
  struct pool_block* e = pool_alloc(200000, 0); /* c's block again, no cudaMalloc */
  if (e != c) fail("caching: the freed block was not reused");
  pool_free(b);
  owner_push("activations");
  struct pool_block* f = pool_alloc(5 * MIB, 0); /* a 6 MiB segment of its own */
  owner_pop();
  struct pool_block* x = pool_alloc_expandable(3 * MIB, 0); /* maps two pages */
  struct pool_block* y = pool_alloc_expandable(2 * MIB, 0); /* maps a third page */
  pool_free(y);                                             /* unmaps it */
  struct pool_block* small[10];
  for (int i = 0; i < 10; i++) small[i] = pool_alloc((size_t)(24 + 48 * i) << 10, 0);

  size_t free_bytes = 0, total_bytes = 0;
  RT(cudaMemGetInfo(&free_bytes, &total_bytes));
  did("meminfo api=cudaMemGetInfo device=%d free_bytes=%zu total_bytes=%zu", pool.device,
      free_bytes, total_bytes);
  if (pool_try_alloc(free_bytes + MIB, 0)) fail("caching: a segment larger than free memory");
  pool_expect_oom_top();

  for (int i = 9; i >= 0; i--) pool_free(small[i]);
  pool_free(x); /* unmaps both pages */
  pool_free(f);
  pool_free(e);
  pool_free(d);
  pool_free(a);
  pool_release_all();
  destroy_stream(s1);
  destroy_stream(s2);
}

/* A reporting pool on device 1: its blocks and figures are device 1's, and a free completes
 * after a device synchronisation. */
static void scenario_caching_two_devices(void) {
  int count = 0;
  RT(cudaGetDeviceCount(&count));
  if (count < 2)
    fail("caching_two_devices needs two devices (MEMTAP_FAKE_CUDA_DEVICES=2), found %d", count);
  RT(cudaSetDevice(1));
  did("set_device api=cudaSetDevice device=1");
  pool_start_reporting();
  cudaStream_t s = create_stream();
  struct pool_block* a = pool_alloc(MIB, s);
  struct pool_block* b = pool_alloc(64 << 10, 0);
  pool_free_requested(a, 1);
  struct pool_block* c = pool_alloc(128 << 10, s);
  RT(cudaDeviceSynchronize());
  did("device_sync api=cudaDeviceSynchronize device=1");
  pool_free_completed(a, 1);
  pool_free(c);
  pool_free(b);
  pool_release_all();
  destroy_stream(s);
  RT(cudaSetDevice(0));
  did("set_device api=cudaSetDevice device=0");
}

/* The reporting pool shared by threads, as PyTorch's allocator is by the program's threads
 * and autograd's: every pool operation under one lock (its report with it, so the expect
 * lines come in the order the pool did things). Blocks freed by one thread are handed to
 * another; and each thread frees one block pending, whose completion the next thread's
 * allocation makes (PyTorch completes waiting frees when it next allocates, on whichever
 * thread that is). */
enum { kPoolThreads = 4, kPoolRounds = 25 };
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool_block* pool_waiting; /* a pending block, completed by the next allocation */

/* The other stream's kernel that used the waiting block runs 12 ms more (past memtap's 10 ms
 * window for a completion that is one free call's); then the pool takes the block back. */
static void pool_complete_waiting(void) {
  if (!pool_waiting) return;
  const struct timespec kernel = {0, 12 * 1000 * 1000};
  nanosleep(&kernel, NULL);
  pool_free_completed(pool_waiting, 1);
  pool_waiting = NULL;
}

/* One size, so that any block freed fits the next request: at most 5 blocks are ever held
 * (4 threads' and a waiting one), one segment holds them, and what the program prints does
 * not depend on how the threads interleave (fake_cuda_test counts it). */
static void* pool_thread_work(void* arg) {
  const int t = (int)(uintptr_t)arg;
  for (int r = 0; r < kPoolRounds; r++) {
    pthread_mutex_lock(&pool_lock);
    pool_complete_waiting();
    struct pool_block* b = pool_alloc(64 << 10, 0);
    pthread_mutex_unlock(&pool_lock);
    pthread_mutex_lock(&pool_lock);
    if (r == t + 3) { /* once per thread: freed while another stream uses it */
      pool_complete_waiting();
      pool_free_requested(b, 1);
      pool_waiting = b;
    } else {
      pool_free(b);
    }
    pthread_mutex_unlock(&pool_lock);
  }
  return NULL;
}

static void scenario_caching_threads(void) {
  pool_start_reporting();
  pthread_t threads[kPoolThreads];
  for (size_t t = 0; t < kPoolThreads; t++)
    if (pthread_create(&threads[t], NULL, pool_thread_work, (void*)(uintptr_t)t) != 0)
      fail("pthread_create failed");
  for (int t = 0; t < kPoolThreads; t++) pthread_join(threads[t], NULL);
  pool_complete_waiting();
  pool_release_all();
  did("threads count=%d rounds=%d", kPoolThreads, kPoolRounds);
}

static void scenario_two_devices(void) {
  int count = 0;
  RT(cudaGetDeviceCount(&count));
  if (count < 2)
    fail("two_devices needs two devices (MEMTAP_FAKE_CUDA_DEVICES=2), found %d", count);
  RT(cudaSetDevice(0));
  did("set_device api=cudaSetDevice device=0");
  void* a = rt_malloc(MIB);
  RT(cudaSetDevice(1));
  did("set_device api=cudaSetDevice device=1");
  void* b = rt_malloc(2 * MIB);
  float* buf = (float*)b;
  launch_add(buf, 0);
  cudaStream_t s = create_stream();
  void* c = malloc_async("cudaMallocAsync", 524288, NULL, s);
  free_async(c, s);
  RT(cudaSetDevice(0));
  did("set_device api=cudaSetDevice device=0");
  rt_free(b, 1);
  rt_free(a, 0);
  destroy_stream(s);
}

static void scenario_fork(void) {
  int device = current_device();
  void* a = rt_malloc(MIB);
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) fail("fork failed");
  if (child == 0) {
    void* b = rt_malloc(524288);
    rt_free(b, device);
    exit(0);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("the fork child failed (status %d)", status);
  did("fork child_pid=%d exit=0", (int)child);
  rt_free(a, device);
}

enum { kThreads = 4 };

static void* thread_work(void* arg) {
  size_t t = (size_t)(uintptr_t)arg;
  void* blocks[3];
  blocks[0] = rt_malloc((t + 1) * 65536);
  blocks[1] = rt_malloc((t + 1) * 131072);
  blocks[2] = rt_malloc((t + 1) * 4096 + 100);
  for (int i = 0; i < 2; i++) launch_add(blocks[0], 0);
  for (int i = 0; i < 3; i++) rt_free(blocks[i], current_device());
  return NULL;
}

static void scenario_threads(void) {
  pthread_t threads[kThreads];
  for (size_t t = 0; t < kThreads; t++)
    if (pthread_create(&threads[t], NULL, thread_work, (void*)(uintptr_t)t) != 0)
      fail("pthread_create failed");
  for (int t = 0; t < kThreads; t++) pthread_join(threads[t], NULL);
  did("threads count=%d", kThreads);
}

struct scenario {
  const char* name;
  void (*run)(void);
  int devices; /* how many it needs: `all` skips it on fewer */
};

static const struct scenario kScenarios[] = {
    {"basic", scenario_basic, 1},
    {"async", scenario_async, 1},
    {"pinned", scenario_pinned, 1},
    {"vmm", scenario_vmm, 1},
    {"launch", scenario_launch, 1},
    {"oom", scenario_oom, 1},
    {"pool", scenario_pool, 1},
    {"caching", scenario_caching, 1},
    {"caching_threads", scenario_caching_threads, 1},
    {"threads", scenario_threads, 1},
    {"fork", scenario_fork, 1},
    {"two_devices", scenario_two_devices, 2},
    {"caching_two_devices", scenario_caching_two_devices, 2},
};
enum { kScenarioCount = sizeof kScenarios / sizeof kScenarios[0] };

static void run(const struct scenario* s) {
  did("scenario name=%s", s->name);
  s->run();
  did("scenario_end name=%s", s->name);
}

static void run_all(void) {
  for (int i = 0; i < kScenarioCount; i++) {
    if (kScenarios[i].devices > 1) {
      int count = 0;
      RT(cudaGetDeviceCount(&count));
      if (count < kScenarios[i].devices) {
        did("skip scenario=%s devices=%d", kScenarios[i].name, count);
        continue;
      }
    }
    run(&kScenarios[i]);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s SCENARIO...  (basic async pinned vmm launch oom pool caching "
            "two_devices caching_two_devices fork threads all)\n",
            argv[0]);
    return 2;
  }
  for (int a = 1; a < argc; a++) {
    int known = strcmp(argv[a], "all") == 0;
    for (int i = 0; i < kScenarioCount; i++) known |= strcmp(argv[a], kScenarios[i].name) == 0;
    if (!known) {
      fprintf(stderr, "memtap_test_cuda_pool: unknown scenario '%s'\n", argv[a]);
      return 2;
    }
  }
  find_memtap_pool();
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "all") == 0) {
      run_all();
      continue;
    }
    for (int i = 0; i < kScenarioCount; i++)
      if (strcmp(argv[a], kScenarios[i].name) == 0) run(&kScenarios[i]);
  }
  return 0;
}
