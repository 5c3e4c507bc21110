/* memtap's own crt/host_defines.h, for compiling the PyTorch pool tracker
 * (memtap/_torch_pool_tracker.cpp) against the CUDA headers of NVIDIA's pip wheels: the
 * nvidia-cuda-runtime wheel has cuda_runtime_api.h but not the crt/ directory it includes
 * (that comes with the CUDA compiler). memtap searches this directory last, so a toolkit's
 * or a wheel's own crt/host_defines.h wins.
 *
 * For a host compiler, the markers that cuda_runtime_api.h and the type headers it includes
 * (driver_types.h, vector_types.h, ...) put on declarations mean nothing but alignment
 * (cuda_runtime_api.h defines its default arguments itself). Only those are defined: a name
 * such as __noinline__ appears in the C++ library's own attributes. */
#ifndef MEMTAP_CUDA_SHIM_HOST_DEFINES_H
#define MEMTAP_CUDA_SHIM_HOST_DEFINES_H

#if defined(__CUDACC__) || defined(__CUDA_ARCH__)
#error "memtap's crt/host_defines.h stands in for CUDA's only in host compilers"
#endif

#define __host__
#define __device__
#define __global__
#define __constant__
#define __managed__
#define __launch_bounds__(...)
#define __cudart_builtin__
#define __device_builtin__
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __align__(n)
#define CUDARTAPI

#endif
