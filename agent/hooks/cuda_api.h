// The few CUDA types, values and prototypes the hooks need, declared here so that the agent
// builds without a CUDA toolkit (values from CUDA 13's cuda.h and driver_types.h; they have
// not changed since CUDA 11). Only what a hook passes through or inspects: handles stay
// opaque, structs the hooks never read are `const void*`.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memtap::cuda {

using CUresult = int;
using cudaError_t = int;
using CUdeviceptr = unsigned long long;
using CUdevice = int;
using CUstream = void*;
using CUfunction = void*;
using CUmemoryPool = void*;
using CUmemGenericAllocationHandle = unsigned long long;
using cuuint64_t = uint64_t;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr cudaError_t cudaSuccess = 0;
constexpr cudaError_t cudaErrorMemoryAllocation = 2;
constexpr cudaError_t cudaErrorInitializationError = 3;

// cuGetProcAddress flags and status.
constexpr cuuint64_t CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1;
constexpr int CU_GET_PROC_ADDRESS_SUCCESS = 0;

struct dim3 {
  unsigned x, y, z;
};

// cudaMalloc3D's out-parameter and extent, as the runtime lays them out.
struct cudaPitchedPtr {
  void* ptr;
  size_t pitch;
  size_t xsize;
  size_t ysize;
};
struct cudaExtent {
  size_t width;
  size_t height;
  size_t depth;
};

// The parts of the launch configurations a hook reads: the stream. cudaLaunchConfig_t is
// {dim3 gridDim, dim3 blockDim, size_t dynamicSmemBytes, cudaStream_t stream, ...};
// CUlaunchConfig is {6 unsigned dims, unsigned sharedMemBytes, CUstream hStream, ...}.
struct cudaLaunchConfigHead {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  CUstream stream;
};
struct CUlaunchConfigHead {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
};

}  // namespace memtap::cuda
