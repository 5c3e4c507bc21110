// The stand-in CUDA runtime, libcudart.so.13 (kernels and launches: runtime_kernels.cpp).
//
// Like the real runtime it never links the driver and never calls a driver symbol: on first
// use it dlopen()s libcuda.so.1, takes cuGetProcAddress_v2 from that handle with dlsym, asks
// it for "cuGetProcAddress" (version 12000), and asks the pointer it gets back for every other
// driver function by base name and version ("cuMemAlloc" 3020, "cuLaunchKernel" 4000, and
// 7000 with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM for the _ptsz variant, ...), then
// calls cuInit. So a tool that interposes dlsym, or wraps what cuGetProcAddress returns, sees
// the runtime's driver calls as it would on a GPU. cudaGetDriverEntryPoint(ByVersion) forward
// to the same cuGetProcAddress.
//
// Contexts as in the real runtime: each thread has a device (0 until cudaSetDevice); the
// first call that needs a context makes that device's primary context current (retained
// once per process), and cudaSetDevice makes it current at once.
#include <dlfcn.h>
#include <pthread.h>

#include <climits>

#include "tests/fake_cuda/runtime_state.h"

using namespace fake_cudart;

namespace {

constexpr int kRuntimeVersion = 13000;
constexpr int kMaxDevices = 8;

pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
cudaError_t g_load_error = cudaSuccess;
CUcontext g_primary[kMaxDevices];  // retained once (under g_lock), on first use

__thread int t_device __attribute__((tls_model("initial-exec")));
__thread cudaError_t t_last_error __attribute__((tls_model("initial-exec")));

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

// Texts as the real runtime gives them.
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* find_error(cudaError_t code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

template <typename F>
bool lookup(F* fn, const char* name, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (d.get_proc_address(name, &p, version, flags, &status) != CUDA_SUCCESS || !p) return false;
  *fn = reinterpret_cast<F>(p);
  return true;
}

void load_driver() {
  g_load_error = cudaErrorInsufficientDriver;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  // g_lock is held around fork, so that a child never inherits it held. Registered after the
  // driver's own handler: prepare handlers run last-registered first, so g_lock is taken
  // before the driver's lock, in the order of the calls the runtime makes to the driver
  // while holding g_lock.
  pthread_atfork([] { pthread_mutex_lock(&g_lock); }, [] { pthread_mutex_unlock(&g_lock); },
                 [] { pthread_mutex_unlock(&g_lock); });
  auto get_proc_address_v2 =
      reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(lib, "cuGetProcAddress_v2"));
  void* p = nullptr;
  if (!get_proc_address_v2 ||
      get_proc_address_v2("cuGetProcAddress", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) !=
          CUDA_SUCCESS ||
      !p)
    return;
  d.get_proc_address = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(p);
  constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  bool found = lookup(&d.init, "cuInit", 2000) &&
               lookup(&d.driver_get_version, "cuDriverGetVersion", 2020) &&
               lookup(&d.device_get_count, "cuDeviceGetCount", 2000) &&
               lookup(&d.primary_ctx_retain, "cuDevicePrimaryCtxRetain", 7000) &&
               lookup(&d.ctx_set_current, "cuCtxSetCurrent", 4000) &&
               lookup(&d.ctx_get_current, "cuCtxGetCurrent", 4000) &&
               lookup(&d.ctx_get_device, "cuCtxGetDevice", 2000) &&
               lookup(&d.ctx_synchronize, "cuCtxSynchronize", 2000) &&
               lookup(&d.mem_get_info, "cuMemGetInfo", 3020) &&
               lookup(&d.mem_alloc, "cuMemAlloc", 3020) && lookup(&d.mem_free, "cuMemFree", 3020) &&
               lookup(&d.mem_alloc_pitch, "cuMemAllocPitch", 3020) &&
               lookup(&d.mem_alloc_managed, "cuMemAllocManaged", 6000) &&
               lookup(&d.mem_host_alloc, "cuMemHostAlloc", 2020) &&
               lookup(&d.mem_alloc_host, "cuMemAllocHost", 3020) &&
               lookup(&d.mem_free_host, "cuMemFreeHost", 2000) &&
               lookup(&d.mem_alloc_async, "cuMemAllocAsync", 11020) &&
               lookup(&d.mem_free_async, "cuMemFreeAsync", 11020) &&
               lookup(&d.mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync", 11020) &&
               lookup(&d.device_get_default_mem_pool, "cuDeviceGetDefaultMemPool", 11020) &&
               lookup(&d.mem_pool_create, "cuMemPoolCreate", 11020) &&
               lookup(&d.mem_pool_destroy, "cuMemPoolDestroy", 11020) &&
               lookup(&d.stream_create, "cuStreamCreate", 2000) &&
               lookup(&d.stream_destroy, "cuStreamDestroy", 4000) &&
               lookup(&d.stream_synchronize, "cuStreamSynchronize", 2000) &&
               lookup(&d.library_load_data, "cuLibraryLoadData", 12000) &&
               lookup(&d.library_get_kernel, "cuLibraryGetKernel", 12000) &&
               lookup(&d.kernel_get_name, "cuKernelGetName", 12030) &&
               lookup(&d.kernel_get_function, "cuKernelGetFunction", 12000) &&
               lookup(&d.func_get_name, "cuFuncGetName", 12030) &&
               lookup(&d.launch_kernel, "cuLaunchKernel", 4000) &&
               lookup(&d.launch_kernel_ptsz, "cuLaunchKernel", 7000, kPerThread) &&
               lookup(&d.launch_kernel_ex, "cuLaunchKernelEx", 11060);
  if (!found) return;
  g_load_error = from_cu(d.init(0));
}

cudaError_t make_current(int device) {
  CUcontext ctx = nullptr;
  {
    Guard guard;
    if (!g_primary[device]) {
      if (CUresult r = d.primary_ctx_retain(&g_primary[device], device)) return from_cu(r);
    }
    ctx = g_primary[device];
  }
  return from_cu(d.ctx_set_current(ctx));
}

cudaError_t entry_point(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                        unsigned long long flags,
                        enum cudaDriverEntryPointQueryResult* driverStatus) {
  if (cudaError_t e = driver()) return record(e);
  if (!symbol || !funcPtr || cudaVersion > INT_MAX) return record(cudaErrorInvalidValue);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  if (CUresult r = d.get_proc_address(symbol, funcPtr, int(cudaVersion), flags, &status))
    return record(r);
  if (driverStatus) *driverStatus = cudaDriverEntryPointQueryResult(status);
  return cudaSuccess;
}

// `alloc` allocates through the driver, unless `empty`.
template <typename Alloc>
cudaError_t device_alloc(void** devPtr, bool empty, Alloc alloc) {
  if (!devPtr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  if (empty) {  // success and no memory, as with the real runtime
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr dptr = 0;
  if (CUresult r = alloc(&dptr)) return record(r);
  *devPtr = reinterpret_cast<void*>(dptr);
  return cudaSuccess;
}

}  // namespace

namespace fake_cudart {

Driver d;
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

cudaError_t driver() {
  pthread_once(&g_load_once, load_driver);
  return g_load_error;
}

cudaError_t ensure_context() {
  if (cudaError_t e = driver()) return e;
  CUcontext current = nullptr;
  if (CUresult r = d.ctx_get_current(&current)) return from_cu(r);
  return current ? cudaSuccess : make_current(t_device);
}

cudaError_t from_cu(CUresult r) {
  const ErrorText* e = find_error(cudaError_t(r));
  return e ? e->code : cudaErrorUnknown;
}

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

cudaError_t record(CUresult r) {
  return record(from_cu(r));
}

}  // namespace fake_cudart

static_assert(sizeof(cudaMemPoolProps) == sizeof(CUmemPoolProps));

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return record(cudaErrorInvalidValue);
  *count = 0;
  if (cudaError_t e = driver()) return record(e);
  return record(d.device_get_count(count));
}

cudaError_t cudaSetDevice(int device) {
  if (cudaError_t e = driver()) return record(e);
  int count = 0;
  if (CUresult r = d.device_get_count(&count)) return record(r);
  if (device < 0 || device >= count || device >= kMaxDevices) return record(cudaErrorInvalidDevice);
  t_device = device;
  return record(make_current(device));
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return record(cudaErrorInvalidValue);
  if (cudaError_t e = driver()) return record(e);
  CUcontext current = nullptr;
  if (CUresult r = d.ctx_get_current(&current)) return record(r);
  if (!current) {
    *device = t_device;
    return cudaSuccess;
  }
  return record(d.ctx_get_device(device));
}

cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(d.ctx_synchronize());
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return record(cudaErrorInvalidValue);
  *driverVersion = 0;
  if (driver() == cudaErrorInsufficientDriver) return cudaSuccess;  // no driver: version 0
  return record(d.driver_get_version(driverVersion));
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (!runtimeVersion) return record(cudaErrorInvalidValue);
  *runtimeVersion = kRuntimeVersion;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  return t_last_error;
}

const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* e = find_error(error);
  return e ? e->name : "unrecognized error code";
}

const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* e = find_error(error);
  return e ? e->text : "unrecognized error code";
}

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return device_alloc(devPtr, size == 0, [&](CUdeviceptr* p) { return d.mem_alloc(p, size); });
}

cudaError_t cudaFree(void* devPtr) {
  if (cudaError_t e = ensure_context()) return record(e);
  if (!devPtr) return cudaSuccess;
  return record(d.mem_free(reinterpret_cast<CUdeviceptr>(devPtr)));
}

cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (!pitch) return record(cudaErrorInvalidValue);
  *pitch = 0;  // stays 0 for an empty allocation, as on an H100
  return device_alloc(devPtr, width == 0 || height == 0, [&](CUdeviceptr* p) {
    return d.mem_alloc_pitch(p, pitch, width, height, 4);
  });
}

// Pitched like cudaMallocPitch, height * depth rows.
cudaError_t cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent) {
  if (!pitchedDevPtr) return record(cudaErrorInvalidValue);
  size_t rows = extent.height * extent.depth;
  if (extent.depth != 0 && rows / extent.depth != extent.height)
    return record(cudaErrorMemoryAllocation);
  size_t pitch = 0;
  void* ptr = nullptr;
  cudaError_t e = device_alloc(&ptr, extent.width == 0 || rows == 0, [&](CUdeviceptr* p) {
    return d.mem_alloc_pitch(p, &pitch, extent.width, rows, 4);
  });
  if (e == cudaSuccess) *pitchedDevPtr = cudaPitchedPtr{ptr, pitch, extent.width, extent.height};
  return e;
}

cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  return device_alloc(devPtr, size == 0,
                      [&](CUdeviceptr* p) { return d.mem_alloc_managed(p, size, flags); });
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if (!pHost) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  if (size == 0) {
    *pHost = nullptr;
    return cudaSuccess;
  }
  return record(d.mem_host_alloc(pHost, size, flags));
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (!ptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  return record(d.mem_alloc_host(ptr, size));
}

cudaError_t cudaFreeHost(void* ptr) {
  if (cudaError_t e = ensure_context()) return record(e);
  if (!ptr) return cudaSuccess;
  return record(d.mem_free_host(ptr));
}

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return device_alloc(devPtr, size == 0,
                      [&](CUdeviceptr* p) { return d.mem_alloc_async(p, size, hStream); });
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  if (cudaError_t e = ensure_context()) return record(e);
  if (!devPtr) return cudaSuccess;
  return record(d.mem_free_async(reinterpret_cast<CUdeviceptr>(devPtr), hStream));
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream) {
  return device_alloc(ptr, size == 0, [&](CUdeviceptr* p) {
    return d.mem_alloc_from_pool_async(p, size, memPool, stream);
  });
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (cudaError_t e = driver()) return record(e);
  return record(d.device_get_default_mem_pool(memPool, device));
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const struct cudaMemPoolProps* poolProps) {
  if (cudaError_t e = driver()) return record(e);
  return record(d.mem_pool_create(memPool, reinterpret_cast<const CUmemPoolProps*>(poolProps)));
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  if (cudaError_t e = driver()) return record(e);
  return record(d.mem_pool_destroy(memPool));
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(d.mem_get_info(free, total));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(d.stream_create(pStream, flags));
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(d.stream_create(pStream, cudaStreamDefault));
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(d.stream_destroy(stream));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (cudaError_t e = ensure_context()) return record(e);
  return record(d.stream_synchronize(stream));
}

// The runtime's own version (13000) selects the ABIs, as with the real runtime.
cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, kRuntimeVersion, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

}  // extern "C"
