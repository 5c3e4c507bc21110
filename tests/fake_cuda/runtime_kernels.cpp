// The stand-in runtime's kernels and launches.
//
// A launch names its kernel by a host function (cudaLaunchKernel) or by a
// cudaKernel_t (what CUDA 13's <<<>>> passes to __cudaLaunchKernel, after __cudaGetKernel).
// As on an H100, the launches and cudaFuncGetName take either, cudaGetFuncBySymbol only a
// host function (a cudaKernel_t is cudaErrorInvalidDeviceFunction there: a tool naming
// __cudaLaunchKernel's kernels needs cudaFuncGetName or the driver's cuKernelGetName), and a
// launch of anything else is cudaErrorInvalidResourceHandle. The real runtime knows a host
// function from its registration (__cudaRegisterFunction, with the kernel's mangled name);
// the stand-in takes the name of the function's symbol from dladdr (so a program's kernels
// must be in its dynamic symbol table: link it with -rdynamic) and makes one CUkernel per
// function in a built-in library (cuLibraryGetKernel). A launch is a driver cuLaunchKernel
// (cuLaunchKernel_ptsz for the _ptsz entry points) of that kernel, cast to CUfunction.
#include <dlfcn.h>

#include "tests/fake_cuda/runtime_state.h"

using namespace fake_cudart;

namespace {

struct KernelEntry {
  const void* host;  // the kernel's host function
  CUkernel kernel;
};
KernelEntry g_kernels[1024];
int g_kernel_count;
CUlibrary g_library;  // every kernel's, loaded with the first
const char kImage[] = "memtap stand-in fatbin";

// The CUkernel of a host function or cudaKernel_t (registered on first use); *is_handle: it
// was a cudaKernel_t. cudaErrorInvalidDeviceFunction if it is neither.
cudaError_t find_kernel(const void* func, CUkernel* out, bool* is_handle = nullptr) {
  if (cudaError_t e = driver()) return e;
  if (!func) return cudaErrorInvalidDeviceFunction;
  Guard guard;
  for (int i = 0; i < g_kernel_count; i++) {
    if (g_kernels[i].host == func || g_kernels[i].kernel == func) {
      *out = g_kernels[i].kernel;
      if (is_handle) *is_handle = g_kernels[i].kernel == func;
      return cudaSuccess;
    }
  }
  if (is_handle) *is_handle = false;
  Dl_info info;
  if (!dladdr(func, &info) || !info.dli_sname || info.dli_saddr != func)
    return cudaErrorInvalidDeviceFunction;
  if (g_kernel_count == int(sizeof g_kernels / sizeof g_kernels[0]))
    return cudaErrorMemoryAllocation;
  if (!g_library) {
    if (CUresult r =
            d.library_load_data(&g_library, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0))
      return from_cu(r);
  }
  CUkernel kernel = nullptr;
  if (CUresult r = d.library_get_kernel(&kernel, g_library, info.dli_sname)) return from_cu(r);
  g_kernels[g_kernel_count++] = KernelEntry{func, kernel};
  *out = kernel;
  return cudaSuccess;
}

// A launch of what is no kernel fails as on an H100: cudaErrorInvalidResourceHandle.
cudaError_t launch_kernel_of(const void* func, CUkernel* kernel) {
  cudaError_t e = find_kernel(func, kernel);
  return e == cudaErrorInvalidDeviceFunction ? cudaErrorInvalidResourceHandle : e;
}

cudaError_t launch(const void* func, dim3 grid, dim3 block, void** args, size_t sharedMem,
                   cudaStream_t stream, bool per_thread) {
  if (cudaError_t e = ensure_context()) return record(e);
  CUkernel kernel = nullptr;
  if (cudaError_t e = launch_kernel_of(func, &kernel)) return record(e);
  auto* launch_kernel = per_thread ? d.launch_kernel_ptsz : d.launch_kernel;
  return record(launch_kernel(reinterpret_cast<CUfunction>(kernel), grid.x, grid.y, grid.z, block.x,
                              block.y, block.z, unsigned(sharedMem), stream, args, nullptr));
}

}  // namespace

static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute));

extern "C" {

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                             size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, false);
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream) {
  return launch(func, gridDim, blockDim, args, sharedMem, stream, true);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream) {
  return launch(kernel, gridDim, blockDim, args, sharedMem, stream, false);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream) {
  return launch(kernel, gridDim, blockDim, args, sharedMem, stream, true);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (!config) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUkernel kernel = nullptr;
  if (cudaError_t e = launch_kernel_of(func, &kernel)) return record(e);
  CUlaunchConfig c = {config->gridDim.x,
                      config->gridDim.y,
                      config->gridDim.z,
                      config->blockDim.x,
                      config->blockDim.y,
                      config->blockDim.z,
                      unsigned(config->dynamicSmemBytes),
                      config->stream,
                      reinterpret_cast<CUlaunchAttribute*>(config->attrs),
                      config->numAttrs};
  return record(d.launch_kernel_ex(&c, reinterpret_cast<CUfunction>(kernel), args, nullptr));
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* entryFuncAddr) {
  if (!kernel) return record(cudaErrorInvalidValue);
  return record(find_kernel(entryFuncAddr, kernel));
}

cudaError_t cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
  if (!kernelPtr) return record(cudaErrorInvalidValue);
  return record(find_kernel(entryFuncAddr, kernelPtr));
}

// The kernel's function of a host function; a cudaKernel_t is refused, as on an H100.
cudaError_t cudaGetFuncBySymbol(cudaFunction_t* functionPtr, const void* symbolPtr) {
  if (!functionPtr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context()) return record(e);
  CUkernel kernel = nullptr;
  bool is_handle = false;
  if (cudaError_t e = find_kernel(symbolPtr, &kernel, &is_handle)) return record(e);
  if (is_handle) return record(cudaErrorInvalidDeviceFunction);
  return record(d.kernel_get_function(functionPtr, kernel));
}

// The kernel's name as the driver has it: the symbol's, mangled if it is C++.
cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (!name) return record(cudaErrorInvalidValue);
  CUkernel kernel = nullptr;
  if (cudaError_t e = find_kernel(func, &kernel)) return record(e);
  return record(d.kernel_get_name(name, kernel));
}

}  // extern "C"
