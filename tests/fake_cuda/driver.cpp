// The stand-in CUDA driver, libcuda.so.1: initialisation, devices, primary contexts, streams,
// memory pools, error names and cuGetProcAddress. Memory is in driver_memory.cpp, kernels in
// driver_kernels.cpp, their shared state in driver_state.h.
//
// cuInit reads the machine from the environment: MEMTAP_FAKE_CUDA_DEVICES devices (default 1,
// at most 8; 0 makes cuInit fail with CUDA_ERROR_NO_DEVICE), MEMTAP_FAKE_CUDA_CAPACITY bytes
// of memory each (default 1 GiB). Before cuInit every call but cuInit, cuDriverGetVersion,
// cuGetErrorName/String and cuGetProcAddress(_v2) returns CUDA_ERROR_NOT_INITIALIZED; after
// it, calls that need a context return CUDA_ERROR_INVALID_CONTEXT until one is made current
// (contexts are per thread), as on a real driver.
#include <cstdlib>
#include <cstring>

#include "tests/fake_cuda/driver_state.h"

namespace fake_cuda {

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
bool g_initialized = false;
int g_device_count = 0;
size_t g_capacity = 0;
size_t g_used[kMaxDevices];
Context g_contexts[kMaxDevices];
Pool g_pools[kMaxPools];
__thread Context* t_current __attribute__((tls_model("initial-exec")));

namespace {

constexpr int kMaxStreams = 1024;
Stream g_streams[kMaxStreams];
int g_next_stream;  // round-robin, so that a destroyed stream's handle is not soon reused

// A fork child goes on with the parent's state (plain memory); the lock is taken around
// fork so that the child never inherits it held.
__attribute__((constructor)) void install_fork_handlers() {
  pthread_atfork([] { pthread_mutex_lock(&g_lock); }, [] { pthread_mutex_unlock(&g_lock); },
                 [] { pthread_mutex_unlock(&g_lock); });
}

long long env_number(const char* name, long long fallback) {
  const char* text = getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  long long n = strtoll(text, &end, 10);
  return (*end || n < 0) ? fallback : n;
}

bool is_default_stream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

Context* find_context(CUcontext ctx) {
  for (Context& c : g_contexts)
    if (reinterpret_cast<CUcontext>(&c) == ctx && c.retains > 0) return &c;
  return nullptr;
}

}  // namespace

bool valid_device(int device) {
  return device >= 0 && device < g_device_count;
}

CUresult initialized() {
  return g_initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult current_device(int* device) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!t_current || t_current->retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  *device = t_current->device;
  return CUDA_SUCCESS;
}

CUresult stream_device(CUstream stream, int* device) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (is_default_stream(stream)) return current_device(device);
  Stream* s = find_handle(g_streams, stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  *device = s->device;
  return CUDA_SUCCESS;
}

Pool* find_pool(CUmemoryPool pool) {
  return find_handle(g_pools, pool);
}

}  // namespace fake_cuda

using namespace fake_cuda;

extern "C" {

CUresult cuInit(unsigned int Flags) {
  Lock lock;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (g_initialized) return CUDA_SUCCESS;
  long long devices = env_number("MEMTAP_FAKE_CUDA_DEVICES", 1);
  if (devices == 0) return CUDA_ERROR_NO_DEVICE;
  g_device_count = devices > kMaxDevices ? kMaxDevices : int(devices);
  g_capacity = size_t(env_number("MEMTAP_FAKE_CUDA_CAPACITY", 1ll << 30));
  for (int d = 0; d < g_device_count; d++) {
    g_contexts[d] = Context{d, 0};
    g_pools[d] = Pool{true, true, d};
  }
  g_initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = g_device_count;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  g_contexts[dev].retains++;
  *pctx = reinterpret_cast<CUcontext>(&g_contexts[dev]);
  return CUDA_SUCCESS;
}

// Releasing the last reference deactivates the context; unlike a real driver, the memory
// allocated in it stays allocated.
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (g_contexts[dev].retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  g_contexts[dev].retains--;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!ctx) {
    t_current = nullptr;
    return CUDA_SUCCESS;
  }
  Context* c = find_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = c;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = reinterpret_cast<CUcontext>(t_current);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  Lock lock;
  int d = 0;
  if (CUresult r = current_device(&d)) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = d;
  return CUDA_SUCCESS;
}

// CUDA 13's form (what a lookup of "cuCtxGetDevice" with version 13000 returns): a null ctx
// means the current one.
CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  if (!ctx) return cuCtxGetDevice(device);
  Lock lock;
  if (CUresult r = initialized()) return r;
  Context* c = find_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = c->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  Lock lock;
  int d = 0;
  return current_device(&d);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (!ctx) return cuCtxSynchronize();
  Lock lock;
  if (CUresult r = initialized()) return r;
  return find_context(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  if (!phStream || (Flags & ~unsigned(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < kMaxStreams; i++) {
    Stream& s = g_streams[(g_next_stream + i) % kMaxStreams];
    if (s.live) continue;
    s = Stream{true, device};
    g_next_stream = int(&s - g_streams) + 1;
    *phStream = reinterpret_cast<CUstream>(&s);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  Stream* s = find_handle(g_streams, hStream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  s->live = false;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream) {
  return cuStreamDestroy_v2(hStream);
}

// Work is done when it is issued, so a stream is always synchronised.
CUresult cuStreamSynchronize(CUstream hStream) {
  Lock lock;
  int device = 0;
  return stream_device(hStream, &device);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  return cuStreamSynchronize(hStream);
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pool_out = reinterpret_cast<CUmemoryPool>(&g_pools[dev]);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      !valid_device(poolProps->location.id))
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = kMaxDevices; i < kMaxPools; i++) {
    if (g_pools[i].live) continue;
    g_pools[i] = Pool{true, false, poolProps->location.id};
    *pool = reinterpret_cast<CUmemoryPool>(&g_pools[i]);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

// Blocks allocated from the pool stay allocated (a real driver frees them).
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  Pool* p = find_pool(pool);
  if (!p || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  p->live = false;
  return CUDA_SUCCESS;
}

}  // extern "C"

// ---------------------------------------------------------------------------- error names

namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

// Texts as an H100's driver gives them.
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* find_error(CUresult code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

}  // namespace

extern "C" {

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find_error(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find_error(error);
  *pStr = e ? e->text : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"

// -------------------------------------------------------------------------- cuGetProcAddress
//
// A lookup names a function by its base name ("cuMemAlloc") and the CUDA version whose ABI
// the caller was compiled against; the driver returns the newest variant introduced at or
// before that version (cuMemAlloc: 2000, cuMemAlloc_v2: 3020). With
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, a function that has a per-thread-stream
// variant (_ptsz) returns that variant or nothing (cuLaunchKernel_ptsz appeared in 7000:
// version 4000 finds none), and one without returns its ordinary variant. What an H100's
// driver was seen to do, and the stand-in does: an unknown name, or a full name like
// "cuMemAlloc_v2", gives CUDA_SUCCESS, a null pointer and SYMBOL_NOT_FOUND; a version below
// the first variant gives CUDA_SUCCESS, a null pointer and VERSION_NOT_SUFFICIENT; a version
// above the driver's (13000), or an unknown flag, gives CUDA_ERROR_INVALID_VALUE and leaves
// *pfn and *symbolStatus alone. The legacy 4-argument cuGetProcAddress returns
// CUDA_ERROR_NOT_FOUND instead of the two statuses, leaving *pfn alone.

namespace {

struct Proc {
  const char* name;
  int version;      // the CUDA version that introduced this variant
  bool per_thread;  // the _ptsz variant
  void* fn;
};

#define PROC(name, version, fn) \
  { name, version, false, reinterpret_cast<void*>(&fn) }
#define PROC_PTSZ(name, version, fn) \
  { name, version, true, reinterpret_cast<void*>(&fn) }
const Proc kProcs[] = {
    PROC("cuInit", 2000, cuInit),
    PROC("cuDriverGetVersion", 2020, cuDriverGetVersion),
    PROC("cuDeviceGetCount", 2000, cuDeviceGetCount),
    PROC("cuDeviceGet", 2000, cuDeviceGet),
    PROC("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    PROC("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    PROC("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    PROC("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    PROC("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    PROC("cuCtxGetDevice", 2000, cuCtxGetDevice),
    PROC("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    PROC("cuCtxSynchronize", 2000, cuCtxSynchronize),
    PROC("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    PROC("cuMemGetInfo", 2000, cuMemGetInfo),
    PROC("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    PROC("cuMemAlloc", 2000, cuMemAlloc),
    PROC("cuMemAlloc", 3020, cuMemAlloc_v2),
    PROC("cuMemAllocPitch", 2000, cuMemAllocPitch),
    PROC("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    PROC("cuMemFree", 2000, cuMemFree),
    PROC("cuMemFree", 3020, cuMemFree_v2),
    PROC("cuMemAllocManaged", 6000, cuMemAllocManaged),
    PROC("cuMemAllocHost", 2000, cuMemAllocHost),
    PROC("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    PROC("cuMemHostAlloc", 2020, cuMemHostAlloc),
    PROC("cuMemFreeHost", 2000, cuMemFreeHost),
    PROC("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PROC_PTSZ("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    PROC("cuMemFreeAsync", 11020, cuMemFreeAsync),
    PROC_PTSZ("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    PROC("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    PROC_PTSZ("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync_ptsz),
    PROC("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    PROC("cuMemPoolCreate", 11020, cuMemPoolCreate),
    PROC("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    PROC("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    PROC("cuMemAddressReserve", 10020, cuMemAddressReserve),
    PROC("cuMemAddressFree", 10020, cuMemAddressFree),
    PROC("cuMemCreate", 10020, cuMemCreate),
    PROC("cuMemRelease", 10020, cuMemRelease),
    PROC("cuMemMap", 10020, cuMemMap),
    PROC("cuMemUnmap", 10020, cuMemUnmap),
    PROC("cuMemSetAccess", 10020, cuMemSetAccess),
    PROC("cuModuleLoadData", 2000, cuModuleLoadData),
    PROC("cuModuleUnload", 2000, cuModuleUnload),
    PROC("cuModuleGetFunction", 2000, cuModuleGetFunction),
    PROC("cuFuncGetName", 12030, cuFuncGetName),
    PROC("cuLibraryLoadData", 12000, cuLibraryLoadData),
    PROC("cuLibraryUnload", 12000, cuLibraryUnload),
    PROC("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
    PROC("cuKernelGetFunction", 12000, cuKernelGetFunction),
    PROC("cuKernelGetName", 12030, cuKernelGetName),
    PROC("cuLaunchKernel", 4000, cuLaunchKernel),
    PROC_PTSZ("cuLaunchKernel", 7000, cuLaunchKernel_ptsz),
    PROC("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    PROC_PTSZ("cuLaunchKernelEx", 11060, cuLaunchKernelEx_ptsz),
    PROC("cuStreamCreate", 2000, cuStreamCreate),
    PROC("cuStreamDestroy", 2000, cuStreamDestroy),
    PROC("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    PROC("cuStreamSynchronize", 2000, cuStreamSynchronize),
    PROC_PTSZ("cuStreamSynchronize", 7000, cuStreamSynchronize_ptsz),
    PROC("cuGetErrorName", 6000, cuGetErrorName),
    PROC("cuGetErrorString", 6000, cuGetErrorString),
    PROC("cuGetProcAddress", 11030, cuGetProcAddress),
    PROC("cuGetProcAddress", 12000, cuGetProcAddress_v2),
};
#undef PROC
#undef PROC_PTSZ

CUdriverProcAddressQueryResult find_proc(const char* symbol, int version, cuuint64_t flags,
                                         void** fn) {
  bool known = false, has_per_thread = false;
  for (const Proc& p : kProcs) {
    if (strcmp(p.name, symbol) != 0) continue;
    known = true;
    has_per_thread |= p.per_thread;
  }
  if (!known) return CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  bool per_thread = has_per_thread && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  const Proc* best = nullptr;
  for (const Proc& p : kProcs) {
    if (strcmp(p.name, symbol) != 0 || p.per_thread != per_thread || p.version > version) continue;
    if (!best || p.version > best->version) best = &p;
  }
  if (!best) return CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  *fn = best->fn;
  return CU_GET_PROC_ADDRESS_SUCCESS;
}

bool valid_query(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  return symbol && pfn && cudaVersion <= kDriverVersion && !(flags & ~kKnownFlags);
}

}  // namespace

extern "C" {

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  if (!valid_query(symbol, pfn, cudaVersion, flags)) return CUDA_ERROR_INVALID_VALUE;
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = find_proc(symbol, cudaVersion, flags, &fn);
  *pfn = fn;
  if (symbolStatus) *symbolStatus = status;
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  if (!valid_query(symbol, pfn, cudaVersion, flags)) return CUDA_ERROR_INVALID_VALUE;
  void* fn = nullptr;
  if (find_proc(symbol, cudaVersion, flags, &fn) != CU_GET_PROC_ADDRESS_SUCCESS)
    return CUDA_ERROR_NOT_FOUND;
  *pfn = fn;
  return CUDA_SUCCESS;
}

}  // extern "C"
