// CUDA runtime hooks, by symbol: PyTorch and most CUDA programs link libcudart and call
// these. See docs/design-notes.md, agent/hooks "Device hooks".
//
// Each hook records as the outermost CUDA call (cuda_record.h), so the driver calls the
// runtime makes for it only pass through. A statically linked runtime has no symbols to
// interpose; its driver calls are recorded instead (cuda_driver.cpp).
#include <dlfcn.h>

#include <atomic>

#include "agent/hooks/cuda_entry_points.h"
#include "agent/hooks/cuda_record.h"
#include "agent/hooks/elf_symbols.h"

#define MEMTAP_HOOK extern "C" __attribute__((visibility("default")))

using namespace memtap;
using namespace memtap::cuda;

namespace {

// The runtime's own function: the next definition after the agent, or, where the runtime
// was loaded with RTLD_LOCAL (a Python extension's dependency, which binds its calls to our
// hooks all the same), the one in the loaded libcudart.
void* find_runtime_function(const char* name) {
  if (void* f = dlsym(RTLD_NEXT, name)) return f;
  return find_loaded_symbol("libcudart.so", name);
}

template <typename Fn>
Fn runtime_function(std::atomic<void*>* slot, const char* name) {
  void* f = slot->load(std::memory_order_acquire);
  if (__builtin_expect(f == nullptr, 0)) {
    f = find_runtime_function(name);
    slot->store(f, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(f);
}

// The real function of the hook `fn`, found once.
#define MEMTAP_REAL(fn)                \
  static std::atomic<void*> real_slot; \
  auto real = runtime_function<decltype(&fn)>(&real_slot, #fn)

using AllocFn = cudaError_t (*)(void**, size_t);

using MallocAsyncFn = cudaError_t (*)(void**, size_t, CUstream);
using FreeAsyncFn = cudaError_t (*)(void*, CUstream);
using MallocFromPoolFn = cudaError_t (*)(void**, size_t, CUmemoryPool, CUstream);
using LaunchFn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, CUstream);
using LaunchExFn = cudaError_t (*)(const cudaLaunchConfigHead*, const void*, void**);

cudaError_t malloc_async(MallocAsyncFn real, void** p, size_t size, CUstream stream) {
  if (!real) return cudaErrorInitializationError;
  static uint32_t api;
  CudaCall call;
  const cudaError_t r = real(p, size, stream);
  cuda_after_alloc(call, r, EventKind::kDeviceMalloc, "cudaMallocAsync", &api,
                   r == cudaSuccess ? cuda_addr(*p) : 0, size, true, stream);
  return r;
}

cudaError_t free_async(FreeAsyncFn real, void* p, CUstream stream) {
  if (!real) return cudaErrorInitializationError;
  CudaCall call;
  const uint64_t ts = cuda_clock();
  const cudaError_t r = real(p, stream);
  cuda_after_free(call, r, EventKind::kDeviceFree, cuda_addr(p), ts, true, stream);
  return r;
}

cudaError_t malloc_from_pool(MallocFromPoolFn real, void** p, size_t size, CUmemoryPool pool,
                             CUstream stream) {
  if (!real) return cudaErrorInitializationError;
  static uint32_t api;
  CudaCall call;
  const cudaError_t r = real(p, size, pool, stream);
  cuda_after_alloc(call, r, EventKind::kDeviceMalloc, "cudaMallocFromPoolAsync", &api,
                   r == cudaSuccess ? cuda_addr(*p) : 0, size, true, stream);
  return r;
}

cudaError_t launch(LaunchFn real, const void* func, dim3 grid, dim3 block, void** args,
                   size_t shared_bytes, CUstream stream) {
  if (!real) return cudaErrorInitializationError;
  CudaCall call;
  const cudaError_t r = real(func, grid, block, args, shared_bytes, stream);
  if (r == cudaSuccess && call.records()) cuda_note_launch_runtime(func, stream);
  return r;
}

cudaError_t launch_ex(LaunchExFn real, const cudaLaunchConfigHead* config, const void* func,
                      void** args) {
  if (!real) return cudaErrorInitializationError;
  CudaCall call;
  const cudaError_t r = real(config, func, args);
  if (r == cudaSuccess && call.records()) cuda_note_launch_runtime(func, config->stream);
  return r;
}

// The runtime's CUDA version, which cudaGetDriverEntryPoint uses to pick each function's ABI.
int runtime_version() {
  static std::atomic<int> cached{0};
  int v = cached.load(std::memory_order_relaxed);
  if (v == 0) {
    static std::atomic<void*> slot;
    auto get = runtime_function<cudaError_t (*)(int*)>(&slot, "cudaRuntimeGetVersion");
    if (!get || get(&v) != cudaSuccess || v <= 0) return 0;
    cached.store(v, std::memory_order_relaxed);
  }
  return v;
}

}  // namespace

MEMTAP_HOOK cudaError_t cudaMalloc(void** p, size_t size) {
  static uint32_t api;
  MEMTAP_REAL(cudaMalloc);
  return real ? cuda_alloc_call(real, EventKind::kDeviceMalloc, "cudaMalloc", &api, p, size)
              : cudaErrorInitializationError;
}

MEMTAP_HOOK cudaError_t cudaFree(void* p) {
  MEMTAP_REAL(cudaFree);
  return real ? cuda_free_call(real, EventKind::kDeviceFree, p) : cudaErrorInitializationError;
}

MEMTAP_HOOK cudaError_t cudaMallocAsync(void** p, size_t size, CUstream stream) {
  MEMTAP_REAL(cudaMallocAsync);
  return malloc_async(real, p, size, stream);
}

MEMTAP_HOOK cudaError_t cudaMallocAsync_ptsz(void** p, size_t size, CUstream stream) {
  MEMTAP_REAL(cudaMallocAsync_ptsz);
  return malloc_async(real, p, size, stream);
}

MEMTAP_HOOK cudaError_t cudaFreeAsync(void* p, CUstream stream) {
  MEMTAP_REAL(cudaFreeAsync);
  return free_async(real, p, stream);
}

MEMTAP_HOOK cudaError_t cudaFreeAsync_ptsz(void* p, CUstream stream) {
  MEMTAP_REAL(cudaFreeAsync_ptsz);
  return free_async(real, p, stream);
}

MEMTAP_HOOK cudaError_t cudaMallocFromPoolAsync(void** p, size_t size, CUmemoryPool pool,
                                                CUstream stream) {
  MEMTAP_REAL(cudaMallocFromPoolAsync);
  return malloc_from_pool(real, p, size, pool, stream);
}

MEMTAP_HOOK cudaError_t cudaMallocFromPoolAsync_ptsz(void** p, size_t size, CUmemoryPool pool,
                                                     CUstream stream) {
  MEMTAP_REAL(cudaMallocFromPoolAsync_ptsz);
  return malloc_from_pool(real, p, size, pool, stream);
}

MEMTAP_HOOK cudaError_t cudaMallocManaged(void** p, size_t size, unsigned flags) {
  static uint32_t api;
  MEMTAP_REAL(cudaMallocManaged);
  return real ? cuda_alloc_call(real, EventKind::kDeviceMalloc, "cudaMallocManaged", &api, p, size,
                                flags)
              : cudaErrorInitializationError;
}

MEMTAP_HOOK cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  MEMTAP_REAL(cudaMallocPitch);
  if (!real) return cudaErrorInitializationError;
  static uint32_t api;
  CudaCall call;
  const cudaError_t r = real(p, pitch, width, height);
  cuda_after_alloc(call, r, EventKind::kDeviceMalloc, "cudaMallocPitch", &api,
                   r == cudaSuccess ? cuda_addr(*p) : 0,
                   r == cudaSuccess ? *pitch * height : width * height);
  return r;
}

MEMTAP_HOOK cudaError_t cudaMalloc3D(cudaPitchedPtr* out, cudaExtent extent) {
  MEMTAP_REAL(cudaMalloc3D);
  if (!real) return cudaErrorInitializationError;
  static uint32_t api;
  CudaCall call;
  const cudaError_t r = real(out, extent);
  const uint64_t size = r == cudaSuccess ? out->pitch * extent.height * extent.depth
                                         : extent.width * extent.height * extent.depth;
  cuda_after_alloc(call, r, EventKind::kDeviceMalloc, "cudaMalloc3D", &api,
                   r == cudaSuccess ? cuda_addr(out->ptr) : 0, size);
  return r;
}

MEMTAP_HOOK cudaError_t cudaMallocHost(void** p, size_t size) {
  static uint32_t api;
  MEMTAP_REAL(cudaMallocHost);
  return real ? cuda_alloc_call(real, EventKind::kPinnedMalloc, "cudaMallocHost", &api, p, size)
              : cudaErrorInitializationError;
}

MEMTAP_HOOK cudaError_t cudaHostAlloc(void** p, size_t size, unsigned flags) {
  static uint32_t api;
  MEMTAP_REAL(cudaHostAlloc);
  return real ? cuda_alloc_call(real, EventKind::kPinnedMalloc, "cudaHostAlloc", &api, p, size,
                                flags)
              : cudaErrorInitializationError;
}

MEMTAP_HOOK cudaError_t cudaFreeHost(void* p) {
  MEMTAP_REAL(cudaFreeHost);
  return real ? cuda_free_call(real, EventKind::kPinnedFree, p) : cudaErrorInitializationError;
}

MEMTAP_HOOK cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                                         size_t shared_bytes, CUstream stream) {
  MEMTAP_REAL(cudaLaunchKernel);
  return launch(real, func, grid, block, args, shared_bytes, stream);
}

MEMTAP_HOOK cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args,
                                              size_t shared_bytes, CUstream stream) {
  MEMTAP_REAL(cudaLaunchKernel_ptsz);
  return launch(real, func, grid, block, args, shared_bytes, stream);
}

// CUDA 13's <<<...>>> launches call these.
MEMTAP_HOOK cudaError_t __cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                                           size_t shared_bytes, CUstream stream) {
  MEMTAP_REAL(__cudaLaunchKernel);
  return launch(real, func, grid, block, args, shared_bytes, stream);
}

MEMTAP_HOOK cudaError_t __cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block,
                                                void** args, size_t shared_bytes, CUstream stream) {
  MEMTAP_REAL(__cudaLaunchKernel_ptsz);
  return launch(real, func, grid, block, args, shared_bytes, stream);
}

MEMTAP_HOOK cudaError_t cudaLaunchKernelExC(const cudaLaunchConfigHead* config, const void* func,
                                            void** args) {
  MEMTAP_REAL(cudaLaunchKernelExC);
  return launch_ex(real, config, func, args);
}

MEMTAP_HOOK cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfigHead* config,
                                                 const void* func, void** args) {
  MEMTAP_REAL(cudaLaunchKernelExC_ptsz);
  return launch_ex(real, config, func, args);
}

// Driver entry points through the runtime (PyTorch's driver API): the runtime asks the
// driver's cuGetProcAddress, which is usually our wrapper already (then the answer is ours
// and stays as it is); where the runtime found the driver before the agent could see it,
// the answer is wrapped here.
MEMTAP_HOOK cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn,
                                                unsigned long long flags, int* status) {
  MEMTAP_REAL(cudaGetDriverEntryPoint);
  if (!real) return cudaErrorInitializationError;
  const cudaError_t r = real(symbol, fn, flags, status);
  const int version = runtime_version();
  if (r == cudaSuccess && fn && *fn && version > 0) {
    *fn = wrap_driver_entry(symbol, version, flags, *fn);
  }
  return r;
}

MEMTAP_HOOK cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn,
                                                         unsigned version, unsigned long long flags,
                                                         int* status) {
  MEMTAP_REAL(cudaGetDriverEntryPointByVersion);
  if (!real) return cudaErrorInitializationError;
  const cudaError_t r = real(symbol, fn, version, flags, status);
  if (r == cudaSuccess && fn && *fn) *fn = wrap_driver_entry(symbol, int(version), flags, *fn);
  return r;
}
