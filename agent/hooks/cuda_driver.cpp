// CUDA driver hooks: exported by symbol for programs that link libcuda, and handed out by
// every lookup (cuda_entry_points.h), since the runtime, PyTorch and Triton reach the
// driver through entry points. See docs/design-notes.md, agent/hooks "Device hooks".
//
// Each hook calls the function its lookup found; the outermost CUDA call of a thread
// records (cuda_record.h), so the cuMemAlloc a cudaMalloc makes only passes through.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "agent/hooks/cuda_entry_points.h"
#include "agent/hooks/cuda_record.h"
#include "agent/hooks/elf_symbols.h"

#define MEMTAP_HOOK extern "C" __attribute__((visibility("default")))

using namespace memtap;
using namespace memtap::cuda;

// The hooks, declared first so that the table below can name them.
MEMTAP_HOOK CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
MEMTAP_HOOK CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                        size_t height, unsigned element_size);
MEMTAP_HOOK CUresult cuMemFree_v2(CUdeviceptr dptr);
MEMTAP_HOOK CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream);
MEMTAP_HOOK CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream);
MEMTAP_HOOK CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
MEMTAP_HOOK CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
MEMTAP_HOOK CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream stream);
MEMTAP_HOOK CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream stream);
MEMTAP_HOOK CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned flags);
MEMTAP_HOOK CUresult cuMemAllocHost_v2(void** pp, size_t bytesize);
MEMTAP_HOOK CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned flags);
MEMTAP_HOOK CUresult cuMemFreeHost(void* p);
MEMTAP_HOOK CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                 const void* prop, unsigned long long flags);
MEMTAP_HOOK CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags);
MEMTAP_HOOK CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
MEMTAP_HOOK CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                    CUstream stream, void** params, void** extra);
MEMTAP_HOOK CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz,
                                         unsigned shared_bytes, CUstream stream, void** params,
                                         void** extra);
MEMTAP_HOOK CUresult cuLaunchKernelEx(const CUlaunchConfigHead* config, CUfunction f, void** params,
                                      void** extra);
MEMTAP_HOOK CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfigHead* config, CUfunction f,
                                           void** params, void** extra);
MEMTAP_HOOK CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                      cuuint64_t flags);
MEMTAP_HOOK CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                         cuuint64_t flags, int* status);

namespace {

// Which stream semantics an ABI has, as cuGetProcAddress's flags select it.
enum class Streams : uint8_t { kAny, kLegacy, kPerThread };

struct DriverHook {
  const char* symbol;  // libcuda's exported name
  const char* base;    // the name lookups by version take
  int min_version;     // the lowest cudaVersion that selects this ABI
  Streams streams;
  void* wrapper;
};

#define MEMTAP_HOOK_ENTRY(fn, base, version, streams) \
  { #fn, base, version, Streams::streams, reinterpret_cast < void*>(&fn) }

const DriverHook kHooks[] = {
    MEMTAP_HOOK_ENTRY(cuMemAlloc_v2, "cuMemAlloc", 3020, kAny),
    MEMTAP_HOOK_ENTRY(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, kAny),
    MEMTAP_HOOK_ENTRY(cuMemFree_v2, "cuMemFree", 3020, kAny),
    MEMTAP_HOOK_ENTRY(cuMemAllocAsync, "cuMemAllocAsync", 11020, kLegacy),
    MEMTAP_HOOK_ENTRY(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, kPerThread),
    MEMTAP_HOOK_ENTRY(cuMemFreeAsync, "cuMemFreeAsync", 11020, kLegacy),
    MEMTAP_HOOK_ENTRY(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, kPerThread),
    MEMTAP_HOOK_ENTRY(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, kLegacy),
    MEMTAP_HOOK_ENTRY(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, kPerThread),
    MEMTAP_HOOK_ENTRY(cuMemAllocManaged, "cuMemAllocManaged", 6000, kAny),
    MEMTAP_HOOK_ENTRY(cuMemAllocHost_v2, "cuMemAllocHost", 3020, kAny),
    MEMTAP_HOOK_ENTRY(cuMemHostAlloc, "cuMemHostAlloc", 2020, kAny),
    MEMTAP_HOOK_ENTRY(cuMemFreeHost, "cuMemFreeHost", 2000, kAny),
    MEMTAP_HOOK_ENTRY(cuMemCreate, "cuMemCreate", 10020, kAny),
    MEMTAP_HOOK_ENTRY(cuMemMap, "cuMemMap", 10020, kAny),
    MEMTAP_HOOK_ENTRY(cuMemUnmap, "cuMemUnmap", 10020, kAny),
    MEMTAP_HOOK_ENTRY(cuLaunchKernel, "cuLaunchKernel", 4000, kLegacy),
    MEMTAP_HOOK_ENTRY(cuLaunchKernel_ptsz, "cuLaunchKernel", 7000, kPerThread),
    MEMTAP_HOOK_ENTRY(cuLaunchKernelEx, "cuLaunchKernelEx", 11060, kLegacy),
    MEMTAP_HOOK_ENTRY(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, kPerThread),
    MEMTAP_HOOK_ENTRY(cuGetProcAddress, "cuGetProcAddress", 11030, kAny),
    MEMTAP_HOOK_ENTRY(cuGetProcAddress_v2, "cuGetProcAddress", 12000, kAny),
};
constexpr size_t kHookCount = sizeof kHooks / sizeof kHooks[0];

// The real function behind each wrapper, by kHooks index. A global: the wrappers of every
// thread read it, and a lookup on any thread may fill it.
std::atomic<void*> g_real[kHookCount];

size_t index_of(const void* wrapper) {
  for (size_t i = 0; i < kHookCount; ++i) {
    if (kHooks[i].wrapper == wrapper) return i;
  }
  __builtin_unreachable();
}

// Gives the wrapper `i` the real function `real`, unless it already has another one.
void* adopt(size_t i, void* real) {
  if (!real || real == kHooks[i].wrapper) return real;
  void* held = nullptr;
  if (g_real[i].compare_exchange_strong(held, real, std::memory_order_acq_rel) || held == real) {
    return kHooks[i].wrapper;
  }
  return real;
}

// The real function of a hook called by symbol before any lookup gave it one: the next
// definition after the agent (libcuda's; our dlsym passes RTLD_NEXT on with the caller kept,
// dl_hooks.cpp), or where libcuda was loaded with RTLD_LOCAL (by the runtime) and the hook
// was found through RTLD_DEFAULT, the loaded libcuda's own.
void* dlsym_next(const char* symbol) {
  if (void* f = dlsym(RTLD_NEXT, symbol)) return f;
  return find_loaded_symbol("libcuda.so", symbol);
}

template <auto Wrapper>
decltype(Wrapper) real_of() {
  // The hook's place in kHooks, found on its first call: a scan of the table on every call
  // cost the hooks' hot path. Constant-initialised (no guard: the agent has no libstdc++).
  static size_t index = kHookCount;
  size_t i = __atomic_load_n(&index, __ATOMIC_RELAXED);
  if (__builtin_expect(i == kHookCount, 0)) {
    i = index_of(reinterpret_cast<void*>(Wrapper));
    __atomic_store_n(&index, i, __ATOMIC_RELAXED);
  }
  void* real = g_real[i].load(std::memory_order_acquire);
  if (__builtin_expect(real == nullptr, 0)) {
    adopt(i, dlsym_next(kHooks[i].symbol));
    real = g_real[i].load(std::memory_order_acquire);
  }
  return reinterpret_cast<decltype(Wrapper)>(real);
}

CUresult alloc_async(CUresult (*real)(CUdeviceptr*, size_t, CUstream), CUdeviceptr* dptr,
                     size_t bytesize, CUstream stream) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  static uint32_t api;
  CudaCall call;
  const CUresult r = real(dptr, bytesize, stream);
  cuda_after_alloc(call, r, EventKind::kDeviceMalloc, "cuMemAllocAsync", &api, r ? 0 : *dptr,
                   bytesize, true, stream);
  return r;
}

CUresult free_async(CUresult (*real)(CUdeviceptr, CUstream), CUdeviceptr dptr, CUstream stream) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CudaCall call;
  const uint64_t ts = cuda_clock();
  const CUresult r = real(dptr, stream);
  cuda_after_free(call, r, EventKind::kDeviceFree, dptr, ts, true, stream);
  return r;
}

CUresult alloc_from_pool(CUresult (*real)(CUdeviceptr*, size_t, CUmemoryPool, CUstream),
                         CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  static uint32_t api;
  CudaCall call;
  const CUresult r = real(dptr, bytesize, pool, stream);
  cuda_after_alloc(call, r, EventKind::kDeviceMalloc, "cuMemAllocFromPoolAsync", &api,
                   r ? 0 : *dptr, bytesize, true, stream);
  return r;
}

using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
using LaunchExFn = CUresult (*)(const CUlaunchConfigHead*, CUfunction, void**, void**);

}  // namespace

namespace memtap {

void* wrap_driver_symbol(const char* symbol, void* real) {
  if (!symbol || symbol[0] != 'c' || symbol[1] != 'u') return real;
  for (size_t i = 0; i < kHookCount; ++i) {
    if (strcmp(kHooks[i].symbol, symbol) == 0) return adopt(i, real);
  }
  return real;
}

void* wrap_driver_entry(const char* symbol, int cuda_version, uint64_t flags, void* real) {
  if (!symbol || symbol[0] != 'c' || symbol[1] != 'u') return real;
  const Streams asked = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
                            ? Streams::kPerThread
                            : Streams::kLegacy;
  size_t best = kHookCount;
  for (size_t i = 0; i < kHookCount; ++i) {
    const DriverHook& h = kHooks[i];
    if (strcmp(h.base, symbol) != 0 || cuda_version < h.min_version) continue;
    if (h.streams != Streams::kAny && h.streams != asked) continue;
    if (best == kHookCount || h.min_version > kHooks[best].min_version) best = i;
  }
  // cuGetProcAddress below 11030 is not one we know the signature of: passed through.
  return best == kHookCount ? real : adopt(best, real);
}

}  // namespace memtap

MEMTAP_HOOK CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  static uint32_t api;
  auto real = real_of<&cuMemAlloc_v2>();
  return real ? cuda_alloc_call(real, EventKind::kDeviceMalloc, "cuMemAlloc_v2", &api, dptr,
                                bytesize)
              : CUDA_ERROR_NOT_INITIALIZED;
}

MEMTAP_HOOK CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                        size_t height, unsigned element_size) {
  auto real = real_of<&cuMemAllocPitch_v2>();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  static uint32_t api;
  CudaCall call;
  const CUresult r = real(dptr, pitch, width, height, element_size);
  // On failure the pitch is unknown: the request is at least width x height.
  cuda_after_alloc(call, r, EventKind::kDeviceMalloc, "cuMemAllocPitch_v2", &api, r ? 0 : *dptr,
                   r ? width * height : *pitch * height);
  return r;
}

MEMTAP_HOOK CUresult cuMemFree_v2(CUdeviceptr dptr) {
  auto real = real_of<&cuMemFree_v2>();
  return real ? cuda_free_call(real, EventKind::kDeviceFree, dptr) : CUDA_ERROR_NOT_INITIALIZED;
}

MEMTAP_HOOK CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  return alloc_async(real_of<&cuMemAllocAsync>(), dptr, bytesize, stream);
}

MEMTAP_HOOK CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  return alloc_async(real_of<&cuMemAllocAsync_ptsz>(), dptr, bytesize, stream);
}

MEMTAP_HOOK CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  return free_async(real_of<&cuMemFreeAsync>(), dptr, stream);
}

MEMTAP_HOOK CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  return free_async(real_of<&cuMemFreeAsync_ptsz>(), dptr, stream);
}

MEMTAP_HOOK CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream stream) {
  return alloc_from_pool(real_of<&cuMemAllocFromPoolAsync>(), dptr, bytesize, pool, stream);
}

MEMTAP_HOOK CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream stream) {
  return alloc_from_pool(real_of<&cuMemAllocFromPoolAsync_ptsz>(), dptr, bytesize, pool, stream);
}

MEMTAP_HOOK CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned flags) {
  static uint32_t api;
  auto real = real_of<&cuMemAllocManaged>();
  return real ? cuda_alloc_call(real, EventKind::kDeviceMalloc, "cuMemAllocManaged", &api, dptr,
                                bytesize, flags)
              : CUDA_ERROR_NOT_INITIALIZED;
}

MEMTAP_HOOK CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  static uint32_t api;
  auto real = real_of<&cuMemAllocHost_v2>();
  return real ? cuda_alloc_call(real, EventKind::kPinnedMalloc, "cuMemAllocHost_v2", &api, pp,
                                bytesize)
              : CUDA_ERROR_NOT_INITIALIZED;
}

MEMTAP_HOOK CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned flags) {
  static uint32_t api;
  auto real = real_of<&cuMemHostAlloc>();
  return real ? cuda_alloc_call(real, EventKind::kPinnedMalloc, "cuMemHostAlloc", &api, pp,
                                bytesize, flags)
              : CUDA_ERROR_NOT_INITIALIZED;
}

MEMTAP_HOOK CUresult cuMemFreeHost(void* p) {
  auto real = real_of<&cuMemFreeHost>();
  return real ? cuda_free_call(real, EventKind::kPinnedFree, p) : CUDA_ERROR_NOT_INITIALIZED;
}

// The virtual-memory API: a mapping is the block a tensor can live in (cuMemCreate's
// physical handle has no address; it is counted once mapped). But where the memory runs
// out is cuMemCreate: PyTorch's expandable segments fail there.
MEMTAP_HOOK CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                 const void* prop, unsigned long long flags) {
  auto real = real_of<&cuMemCreate>();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  static uint32_t api;
  CudaCall call;
  const CUresult r = real(handle, size, prop, flags);
  if (is_oom(r) && call.records()) cuda_note_oom(cuda_api_id("cuMemCreate", &api), size, nullptr);
  return r;
}

MEMTAP_HOOK CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags) {
  auto real = real_of<&cuMemMap>();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  static uint32_t api;
  CudaCall call;
  const CUresult r = real(ptr, size, offset, handle, flags);
  cuda_after_alloc(call, r, EventKind::kDeviceMalloc, "cuMemMap", &api, ptr, size);
  return r;
}

MEMTAP_HOOK CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  auto real = real_of<&cuMemUnmap>();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CudaCall call;
  const uint64_t ts = cuda_clock();
  const CUresult r = real(ptr, size);
  cuda_after_free(call, r, EventKind::kDeviceFree, ptr, ts);
  return r;
}

namespace {

CUresult launch(LaunchFn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream, void** params,
                void** extra) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CudaCall call;
  const CUresult r = real(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
  if (r == CUDA_SUCCESS && call.records()) cuda_note_launch_driver(f, stream);
  return r;
}

CUresult launch_ex(LaunchExFn real, const CUlaunchConfigHead* config, CUfunction f, void** params,
                   void** extra) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CudaCall call;
  const CUresult r = real(config, f, params, extra);
  if (r == CUDA_SUCCESS && call.records()) cuda_note_launch_driver(f, config->hStream);
  return r;
}

}  // namespace

MEMTAP_HOOK CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                    CUstream stream, void** params, void** extra) {
  return launch(real_of<&cuLaunchKernel>(), f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params,
                extra);
}

MEMTAP_HOOK CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz,
                                         unsigned shared_bytes, CUstream stream, void** params,
                                         void** extra) {
  return launch(real_of<&cuLaunchKernel_ptsz>(), f, gx, gy, gz, bx, by, bz, shared_bytes, stream,
                params, extra);
}

MEMTAP_HOOK CUresult cuLaunchKernelEx(const CUlaunchConfigHead* config, CUfunction f, void** params,
                                      void** extra) {
  return launch_ex(real_of<&cuLaunchKernelEx>(), config, f, params, extra);
}

MEMTAP_HOOK CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfigHead* config, CUfunction f,
                                           void** params, void** extra) {
  return launch_ex(real_of<&cuLaunchKernelEx_ptsz>(), config, f, params, extra);
}

// The lookups themselves: whatever they find for a function we hook, the program gets our
// wrapper. The runtime asks cuGetProcAddress_v2 for "cuGetProcAddress" and uses what it
// gets for every later lookup, so that answer is wrapped too.
MEMTAP_HOOK CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                      cuuint64_t flags) {
  auto real = real_of<&cuGetProcAddress>();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(symbol, pfn, cuda_version, flags);
  if (r == CUDA_SUCCESS && pfn && *pfn) *pfn = wrap_driver_entry(symbol, cuda_version, flags, *pfn);
  return r;
}

MEMTAP_HOOK CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                         cuuint64_t flags, int* status) {
  auto real = real_of<&cuGetProcAddress_v2>();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(symbol, pfn, cuda_version, flags, status);
  if (r == CUDA_SUCCESS && pfn && *pfn) *pfn = wrap_driver_entry(symbol, cuda_version, flags, *pfn);
  return r;
}
