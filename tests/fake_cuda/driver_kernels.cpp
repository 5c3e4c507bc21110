// The stand-in driver's kernels: modules (cuModuleLoadData, cuModuleGetFunction: the
// context-bound API Triton uses), libraries (cuLibraryLoadData, cuLibraryGetKernel: the
// context-independent API behind the runtime's cudaKernel_t), their names, and launches.
//
// Any image loads, and any name is found in it: a function is its name, kept as given (a
// mangled "_Z9addKernelPfi" stays mangled, as cuFuncGetName returns it on an H100). A launch
// checks its function, stream and dimensions and does nothing else. As on an H100, a CUkernel
// cast to CUfunction launches, but cuFuncGetName of it (and cuKernelGetName of a CUfunction)
// is CUDA_ERROR_INVALID_HANDLE.
#include <cstring>

#include "tests/fake_cuda/driver_state.h"

using namespace fake_cuda;

namespace {

struct alignas(16) Module {
  bool live;
  bool is_library;
};

struct alignas(16) Function {
  bool live;
  bool is_kernel;  // a CUkernel of a library, not a CUfunction
  const Module* module;
  char name[256];
};

Module g_modules[256];
Function g_functions[4096];

CUresult load(bool is_library, const void* image, Module** out) {
  if (!image) return CUDA_ERROR_INVALID_VALUE;
  for (Module& m : g_modules) {
    if (m.live) continue;
    m = Module{true, is_library};
    *out = &m;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult unload(bool is_library, const void* handle) {
  if (CUresult r = initialized()) return r;
  Module* m = find_handle(g_modules, handle);
  if (!m || m->is_library != is_library) return CUDA_ERROR_INVALID_HANDLE;
  m->live = false;
  for (Function& f : g_functions)
    if (f.live && f.module == m) f.live = false;
  return CUDA_SUCCESS;
}

// The module's function (or kernel) of that name, made on first request.
CUresult get_function(const Module* m, bool is_kernel, const char* name, Function** out) {
  if (!name || !*name || strlen(name) >= sizeof Function::name) return CUDA_ERROR_INVALID_VALUE;
  Function* empty = nullptr;
  for (Function& f : g_functions) {
    if (!f.live) {
      if (!empty) empty = &f;
    } else if (f.module == m && f.is_kernel == is_kernel && strcmp(f.name, name) == 0) {
      *out = &f;
      return CUDA_SUCCESS;
    }
  }
  if (!empty) return CUDA_ERROR_OUT_OF_MEMORY;
  *empty = Function{true, is_kernel, m, {}};
  strcpy(empty->name, name);
  *out = empty;
  return CUDA_SUCCESS;
}

Module* find_module(const void* handle, bool is_library) {
  Module* m = find_handle(g_modules, handle);
  return m && m->is_library == is_library ? m : nullptr;
}

CUresult get_name(const char** name, const void* handle, bool is_kernel) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!name || !handle) return CUDA_ERROR_INVALID_VALUE;
  Function* f = find_handle(g_functions, handle);
  if (!f || f->is_kernel != is_kernel) return CUDA_ERROR_INVALID_HANDLE;
  *name = f->name;
  return CUDA_SUCCESS;
}

CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, CUstream hStream, void** kernelParams, void** extra) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  if (!find_handle(g_functions, f)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = stream_device(hStream, &device)) return r;
  if (!gx || !gy || !gz || !bx || !by || !bz || (kernelParams && extra))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  if (!module) return CUDA_ERROR_INVALID_VALUE;
  Module* m = nullptr;
  if (CUresult r = load(false, image, &m)) return r;
  *module = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod) {
  Lock lock;
  return unload(false, hmod);
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!hfunc) return CUDA_ERROR_INVALID_VALUE;
  const Module* m = find_module(hmod, false);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  Function* f = nullptr;
  if (CUresult r = get_function(m, false, name, &f)) return r;
  *hfunc = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}

CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**,
                           unsigned int, CUlibraryOption*, void**, unsigned int) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!library) return CUDA_ERROR_INVALID_VALUE;
  Module* m = nullptr;
  if (CUresult r = load(true, code, &m)) return r;
  *library = reinterpret_cast<CUlibrary>(m);
  return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(CUlibrary library) {
  Lock lock;
  return unload(true, library);
}

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!pKernel) return CUDA_ERROR_INVALID_VALUE;
  const Module* m = find_module(library, true);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  Function* k = nullptr;
  if (CUresult r = get_function(m, true, name, &k)) return r;
  *pKernel = reinterpret_cast<CUkernel>(k);
  return CUDA_SUCCESS;
}

// The kernel's function in the current context (one per kernel here: contexts share them).
CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  if (!pFunc) return CUDA_ERROR_INVALID_VALUE;
  Function* k = find_handle(g_functions, kernel);
  if (!k || !k->is_kernel) return CUDA_ERROR_INVALID_HANDLE;
  Function* f = nullptr;
  if (CUresult r = get_function(k->module, false, k->name, &f)) return r;
  *pFunc = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  return get_name(name, hfunc, false);
}

CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  return get_name(name, hfunc, true);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int, CUstream hStream, void** kernelParams,
                        void** extra) {
  return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream,
                kernelParams, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int, CUstream hStream,
                             void** kernelParams, void** extra) {
  return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream,
                kernelParams, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                config->blockDimY, config->blockDimZ, config->hStream, kernelParams, extra);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra) {
  return cuLaunchKernelEx(config, f, kernelParams, extra);
}

}  // extern "C"
