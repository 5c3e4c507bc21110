/* Stand-in for the cuda_runtime_api.h of NVIDIA's nvidia-cuda-runtime wheel
 * (tests/fake_torch/): like the real one it includes crt/host_defines.h, which that wheel
 * does not ship (it comes with the CUDA compiler), and marks its declarations with what that
 * header defines; the API itself is the stand-in CUDA runtime's. */
#pragma once

#include "crt/host_defines.h"
#include "memtap_fake_cuda_api.h"

extern __host__ __cudart_builtin__ cudaError_t CUDARTAPI memtap_wheel_marked(int flags);

struct __device_builtin__ __builtin_align__(16) memtap_wheel_float4 {
  float x, y, z, w;
};
