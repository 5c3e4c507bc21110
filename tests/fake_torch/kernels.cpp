// The stand-in torch's kernels: what its tensor operations (torch/_tensor.py) launch, through
// the stand-in CUDA runtime's cudaLaunchKernel on the current device and the stream given,
// as PyTorch's operators do. The kernels never run; the runtime names them from their
// symbols (dladdr), so they are exported, and their bodies differ so that no two are folded
// into one. Each launch prints the kernelLaunch line memtap must record (cuda_pool_prog.c's
// words).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>

#include "tests/fake_torch/expect_line.h"

extern "C" {

// What the kernels write, so that their bodies differ.
__attribute__((visibility("default"))) volatile int standin_kernel_effect;

#define STANDIN_KERNEL(name, n)                                             \
  __attribute__((visibility("default"), noinline)) void name(float* out) {  \
    standin_kernel_effect = standin_kernel_effect + (n) + (out != nullptr); \
  }
STANDIN_KERNEL(standin_sgemm_kernel, 1)
STANDIN_KERNEL(standin_elementwise_kernel, 2)
STANDIN_KERNEL(standin_reduce_kernel, 3)
STANDIN_KERNEL(standin_normal_kernel, 4)
STANDIN_KERNEL(standin_copy_kernel, 5)
STANDIN_KERNEL(standin_adam_kernel, 6)
STANDIN_KERNEL(standin_spin_kernel, 7)
#undef STANDIN_KERNEL

}  // extern "C"

namespace {

struct Kernel {
  const char* op;  // what torch/_tensor.py asks for
  void (*host)(float*);
  const char* name;  // the symbol's, as the runtime names it
};

constexpr Kernel kKernels[] = {
    {"gemm", standin_sgemm_kernel, "standin_sgemm_kernel"},
    {"elementwise", standin_elementwise_kernel, "standin_elementwise_kernel"},
    {"reduce", standin_reduce_kernel, "standin_reduce_kernel"},
    {"normal", standin_normal_kernel, "standin_normal_kernel"},
    {"copy", standin_copy_kernel, "standin_copy_kernel"},
    {"adam", standin_adam_kernel, "standin_adam_kernel"},
    {"spin", standin_spin_kernel, "standin_spin_kernel"},
};

}  // namespace

extern "C" {

// Launches the kernel of `op` on `stream` of the current device: 0, or -1 for an unknown op
// or a launch the runtime refused.
__attribute__((visibility("default"))) int standin_launch(const char* op, uint64_t stream,
                                                          uint64_t out) {
  for (const Kernel& k : kKernels) {
    if (strcmp(k.op, op) != 0) continue;
    int device = 0;
    cudaGetDevice(&device);
    auto* arg = reinterpret_cast<float*>(out);
    void* args[] = {&arg};
    const dim3 grid = {1, 1, 1}, block = {128, 1, 1};
    if (cudaLaunchKernel(reinterpret_cast<const void*>(k.host), grid, block, args, 0,
                         reinterpret_cast<cudaStream_t>(stream)) != cudaSuccess) {
      return -1;
    }
    standin::print_line("expect kernelLaunch api=cudaLaunchKernel name=%s device=%d stream=0x%llx",
                        k.name, device, static_cast<unsigned long long>(stream));
    return 0;
  }
  return -1;
}

// torch.cuda.mem_get_info(device): the device's free and total bytes.
__attribute__((visibility("default"))) int standin_mem_get_info(int device, uint64_t* free,
                                                                uint64_t* total) {
  int previous = 0;
  cudaGetDevice(&previous);
  if (cudaSetDevice(device) != cudaSuccess) return -1;
  size_t f = 0, t = 0;
  const cudaError_t e = cudaMemGetInfo(&f, &t);
  cudaSetDevice(previous);
  *free = f;
  *total = t;
  return e == cudaSuccess ? 0 : -1;
}

}  // extern "C"
