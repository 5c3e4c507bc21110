// Stand-in for PyTorch's c10/cuda/CUDAFunctions.h (tests/fake_torch/): the device queries
// memtap's pool tracker may call, exported by the stand-in libc10_cuda.so.
#pragma once

#include <c10/cuda/CUDAStream.h>

namespace c10::cuda {

C10_CUDA_API DeviceIndex device_count() noexcept;
C10_CUDA_API DeviceIndex current_device();

}  // namespace c10::cuda
