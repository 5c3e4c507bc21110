// Stand-in for PyTorch 2.0's c10/cuda/CUDACachingAllocator.h (tests/fake_torch/): trace
// entries without a device and no way to attach a tracker to the allocator, so memtap's pool
// tracker cannot be had and memtap samples the pool instead. (include/ has the later
// releases' header.)
#pragma once

#include <c10/cuda/CUDAStream.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

namespace c10 {

struct GatheredContext {
  virtual ~GatheredContext() = default;
};

}  // namespace c10

namespace c10::cuda::CUDACachingAllocator {

struct TraceEntry {
  enum Action { ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE, SNAPSHOT, OOM };
  TraceEntry(Action action, int64_t addr, size_t size, cudaStream_t stream,
             std::shared_ptr<GatheredContext> context = nullptr)
      : action_(action),
        addr_(addr),
        context_(std::move(context)),
        stream_(stream),
        size_(int64_t(size)) {}
  Action action_;
  int64_t addr_;
  std::shared_ptr<GatheredContext> context_;
  cudaStream_t stream_;
  int64_t size_;
};

class CUDAAllocator {
 public:
  virtual ~CUDAAllocator() = default;
  virtual std::string name() = 0;
};

C10_CUDA_API extern std::atomic<CUDAAllocator*> allocator;

inline CUDAAllocator* get() {
  return allocator.load();
}

}  // namespace c10::cuda::CUDACachingAllocator
