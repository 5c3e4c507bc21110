// What the CUDA hooks (cuda_runtime.cpp, cuda_driver.cpp) share: the rule that the
// outermost CUDA call records, the current device, and the device records themselves
// (wire.capnp deviceMalloc .. deviceStream).
//
// Not the host hot path: a device allocation costs the program microseconds, and these
// run only in a process that called CUDA.
#pragma once

#include <cstdint>

#include "agent/hooks/cuda_api.h"
#include "common/event_record.h"

namespace memtap {

// Depth of CUDA hooks on this thread. The runtime allocates through the driver on the
// calling thread, so a hook entered while another runs is the library's own call, and
// only passes through: each allocation is recorded once, by the outermost call.
extern __thread int tl_cuda_depth __attribute__((tls_model("initial-exec")));

class CudaCall {
 public:
  CudaCall() : outermost_(tl_cuda_depth++ == 0) {}
  ~CudaCall() { --tl_cuda_depth; }
  CudaCall(const CudaCall&) = delete;
  CudaCall& operator=(const CudaCall&) = delete;
  // Whether this call records (outermost, and the agent is recording on this thread).
  bool records() const;

 private:
  bool outermost_;
};

// The clock of the records (event_clock_now), for the templates below.
uint64_t cuda_clock();

// The interned name of an API ("cudaMalloc"); `cache` is the caller's static, so each name
// is interned once per process.
uint32_t cuda_api_id(const char* name, uint32_t* cache);

// The current context's device (cuCtxGetDevice through the real driver); 0 when there is
// no driver or no context.
uint16_t cuda_current_device();

// A block obtained (kDeviceMalloc or kPinnedMalloc): its stacks first when large enough, a
// deviceStream record when the call has a stream, and on a device's first allocation its
// capacity (deviceInfo).
void cuda_note_malloc(EventKind kind, uint32_t api, uint64_t addr, uint64_t size,
                      bool has_stream = false, cuda::CUstream stream = nullptr);
// A block released (kDeviceFree or kPinnedFree), with the time read before the release, so
// that it precedes any allocation that gets the same address back.
void cuda_note_free(EventKind kind, uint64_t addr, uint64_t ts_before, bool has_stream = false,
                    cuda::CUstream stream = nullptr);
// An allocation refused for lack of memory.
void cuda_note_oom(uint32_t api, uint64_t size, cuda::CUstream stream);

// A kernel launch. The name is looked up once per function: `driver_function` (a
// CUfunction) through cuFuncGetName, or `runtime_function` (a host stub or cudaKernel_t)
// through the runtime's cudaFuncGetName or cuKernelGetName, else the stub's symbol.
void cuda_note_launch_driver(cuda::CUfunction driver_function, cuda::CUstream stream);
void cuda_note_launch_runtime(const void* runtime_function, cuda::CUstream stream);

// Whether a driver result / runtime error is an out-of-memory failure.
inline bool is_oom(int result) {
  return result == cuda::CUDA_ERROR_OUT_OF_MEMORY;  // cudaErrorMemoryAllocation is also 2
}

// What an allocation hook records once the real call returned `result` (CUDA_SUCCESS and
// cudaSuccess are both 0): the block at `addr`, or an out-of-memory failure.
void cuda_after_alloc(const CudaCall& call, int result, EventKind kind, const char* api,
                      uint32_t* api_cache, uint64_t addr, uint64_t size, bool has_stream = false,
                      cuda::CUstream stream = nullptr);
// What a free hook records once the real call returned: the release, at `ts_before`.
void cuda_after_free(const CudaCall& call, int result, EventKind kind, uint64_t addr,
                     uint64_t ts_before, bool has_stream = false, cuda::CUstream stream = nullptr);

inline uint64_t cuda_addr(cuda::CUdeviceptr p) {
  return p;
}
inline uint64_t cuda_addr(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

// The shape most allocation hooks share: `real(out, size, rest...)` puts a block of `size`
// bytes at *out. `api_cache` is the hook's static (cuda_api_id).
template <typename Fn, typename Out, typename... Rest>
int cuda_alloc_call(Fn real, EventKind kind, const char* api, uint32_t* api_cache, Out* out,
                    size_t size, Rest... rest) {
  CudaCall call;
  const int r = real(out, size, rest...);
  cuda_after_alloc(call, r, kind, api, api_cache, r == 0 ? cuda_addr(*out) : 0, size);
  return r;
}

// And most free hooks: `real(block)`.
template <typename Fn, typename Block>
int cuda_free_call(Fn real, EventKind kind, Block block) {
  CudaCall call;
  const uint64_t ts = cuda_clock();
  const int r = real(block);
  cuda_after_free(call, r, kind, cuda_addr(block), ts);
  return r;
}

}  // namespace memtap
