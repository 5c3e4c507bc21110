// What the stand-in runtime's files (runtime.cpp: loading the driver, contexts, errors,
// memory, streams, entry points; runtime_kernels.cpp: kernels and launches) share: the
// driver's functions as the runtime looked them up, its lock, and the steps every call takes.
#pragma once

#include <pthread.h>

#include "tests/fake_cuda/fake_cuda_api.h"

namespace fake_cudart {

// The driver, as looked up through cuGetProcAddress.
struct Driver {
  decltype(&cuGetProcAddress_v2) get_proc_address;
  decltype(&cuInit) init;
  decltype(&cuDriverGetVersion) driver_get_version;
  decltype(&cuDeviceGetCount) device_get_count;
  decltype(&cuDevicePrimaryCtxRetain) primary_ctx_retain;
  decltype(&cuCtxSetCurrent) ctx_set_current;
  decltype(&cuCtxGetCurrent) ctx_get_current;
  decltype(&cuCtxGetDevice) ctx_get_device;
  decltype(&cuCtxSynchronize) ctx_synchronize;
  decltype(&cuMemGetInfo_v2) mem_get_info;
  decltype(&cuMemAlloc_v2) mem_alloc;
  decltype(&cuMemFree_v2) mem_free;
  decltype(&cuMemAllocPitch_v2) mem_alloc_pitch;
  decltype(&cuMemAllocManaged) mem_alloc_managed;
  decltype(&cuMemHostAlloc) mem_host_alloc;
  decltype(&cuMemAllocHost_v2) mem_alloc_host;
  decltype(&cuMemFreeHost) mem_free_host;
  decltype(&cuMemAllocAsync) mem_alloc_async;
  decltype(&cuMemFreeAsync) mem_free_async;
  decltype(&cuMemAllocFromPoolAsync) mem_alloc_from_pool_async;
  decltype(&cuDeviceGetDefaultMemPool) device_get_default_mem_pool;
  decltype(&cuMemPoolCreate) mem_pool_create;
  decltype(&cuMemPoolDestroy) mem_pool_destroy;
  decltype(&cuStreamCreate) stream_create;
  decltype(&cuStreamDestroy_v2) stream_destroy;
  decltype(&cuStreamSynchronize) stream_synchronize;
  decltype(&cuLibraryLoadData) library_load_data;
  decltype(&cuLibraryGetKernel) library_get_kernel;
  decltype(&cuKernelGetName) kernel_get_name;
  decltype(&cuKernelGetFunction) kernel_get_function;
  decltype(&cuFuncGetName) func_get_name;  // unused, looked up as the real runtime does
  decltype(&cuLaunchKernel) launch_kernel;
  decltype(&cuLaunchKernel_ptsz) launch_kernel_ptsz;
  decltype(&cuLaunchKernelEx) launch_kernel_ex;
};

extern Driver d;  // set once by driver()

// Guards the runtime's own state (the primary contexts it retained, the kernels). Held while
// calling the driver, never the other way round.
extern pthread_mutex_t g_lock;
struct Guard {
  Guard() { pthread_mutex_lock(&g_lock); }
  ~Guard() { pthread_mutex_unlock(&g_lock); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
};

// The driver, loaded and initialised on first use; its failure is every call's.
cudaError_t driver();
// The calling thread's context: its device's primary context, made current if none is.
cudaError_t ensure_context();
// The driver's codes the stand-in driver returns have the runtime's numbers.
cudaError_t from_cu(CUresult r);
// Every entry point returns through here: a failure becomes the thread's last error.
cudaError_t record(cudaError_t e);
cudaError_t record(CUresult r);

}  // namespace fake_cudart
