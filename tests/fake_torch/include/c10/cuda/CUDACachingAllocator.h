// Stand-in for PyTorch's c10/cuda/CUDACachingAllocator.h (tests/fake_torch/): the trace
// entry and the tracker hook that memtap's pool tracker
// (agent/python/memtap/_torch_pool_tracker.cpp) is compiled against on a user's machine, in
// the shape of these releases (MEMTAP_STANDIN_TORCH, from c10/standin_release.h):
//
//   201  PyTorch 2.1: `int device_`, `int64_t addr_` and `size_`, cudaStream_t stream_,
//        expandable segments' SEGMENT_MAP/SEGMENT_UNMAP, trace trackers.
//   209  PyTorch 2.9: `c10::DeviceIndex device_`, `size_t addr_` and `size_`, a memory pool
//        id, compile context and user metadata (214, PyTorch 2.14, has the same entries;
//        its headers need C++20, see CUDAStream.h).
//
// (include-2.0/ has PyTorch 2.0's, which has no trace trackers.) As in PyTorch, the hook is
// an inline function that calls the allocator object libc10_cuda.so exports, so the tracker
// links against that library's data symbol.
#pragma once

#include <c10/cuda/CUDAStream.h>

#include <atomic>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace c10 {

struct GatheredContext {
  virtual ~GatheredContext() = default;
};

using approx_time_t = int64_t;
using CaptureId_t = unsigned long long;
using MempoolId_t = std::pair<CaptureId_t, CaptureId_t>;

}  // namespace c10

namespace c10::cuda::CUDACachingAllocator {

union trace_time_ {
  time_t t_;
  approx_time_t approx_t_;
};

struct TraceEntry {
  enum Action {
    ALLOC,
    FREE_REQUESTED,
    FREE_COMPLETED,
    SEGMENT_ALLOC,
    SEGMENT_FREE,
    SEGMENT_MAP,
    SEGMENT_UNMAP,
    SNAPSHOT,
    OOM
  };

#if MEMTAP_STANDIN_TORCH >= 209
  TraceEntry(Action action, c10::DeviceIndex device, size_t addr, size_t size, cudaStream_t stream,
             MempoolId_t mempool, approx_time_t time,
             std::shared_ptr<GatheredContext> context = nullptr, std::string compile_context = "",
             std::string user_metadata = "")
      : action_(action),
        device_(device),
        addr_(addr),
        context_(std::move(context)),
        stream_(stream),
        size_(size),
        mempool_(std::move(mempool)),
        compile_context_(std::move(compile_context)),
        user_metadata_(std::move(user_metadata)) {
    time_.approx_t_ = time;
  }
  Action action_;
  c10::DeviceIndex device_;
  size_t addr_;  // for OOM, the free bytes CUDA reported
  std::shared_ptr<GatheredContext> context_;
  cudaStream_t stream_{};
  size_t size_;
  MempoolId_t mempool_;
  trace_time_ time_{};
  std::string compile_context_;
  std::string user_metadata_;
#else
  TraceEntry(Action action, int device, int64_t addr, size_t size, cudaStream_t stream,
             approx_time_t time, std::shared_ptr<GatheredContext> context = nullptr)
      : action_(action),
        device_(device),
        addr_(addr),
        context_(std::move(context)),
        stream_(stream),
        size_(int64_t(size)) {
    time_.approx_t_ = time;
  }
  Action action_;
  int device_;
  int64_t addr_;  // for OOM, the free bytes CUDA reported
  std::shared_ptr<GatheredContext> context_;
  cudaStream_t stream_;
  int64_t size_;
  trace_time_ time_;
#endif
};

using AllocatorTraceTracker = std::function<void(const TraceEntry&)>;

class CUDAAllocator {
 public:
  virtual ~CUDAAllocator() = default;
  // Trackers are called under the device's allocator lock, on the thread that allocates
  // or frees.
  virtual void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) = 0;
  virtual std::string name() = 0;
};

C10_CUDA_API extern std::atomic<CUDAAllocator*> allocator;

inline CUDAAllocator* get() {
  return allocator.load();
}

inline void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) {
  get()->attachAllocatorTraceTracker(std::move(tracker));
}

}  // namespace c10::cuda::CUDACachingAllocator
