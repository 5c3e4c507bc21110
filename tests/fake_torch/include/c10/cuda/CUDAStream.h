// Stand-in for PyTorch's c10/cuda/CUDAStream.h (tests/fake_torch/): the part that memtap's
// pool tracker (agent/python/memtap/_torch_pool_tracker.cpp) names, declared as PyTorch
// declares it. A c10::Stream is a device and an id; for an external stream the id is the
// cudaStream_t itself, which is all this stand-in has. From PyTorch 2.14 the c10 headers
// are C++20 (std::strong_ordering in intrusive_ptr.h, string_view::starts_with): so are
// this stand-in's, by a comparison a C++17 compiler cannot parse.
#pragma once

#include <c10/standin_release.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#if MEMTAP_STANDIN_TORCH >= 214
#include <compare>
#endif

#define C10_CUDA_API __attribute__((visibility("default")))

namespace c10 {

using DeviceIndex = int8_t;
using StreamId = int64_t;

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };

struct Device {
  DeviceType type;
  DeviceIndex index;
};

class Stream {
 public:
  Stream(Device device, StreamId id) : device_(device), id_(id) {}
  Device device() const { return device_; }
  StreamId id() const { return id_; }
#if MEMTAP_STANDIN_TORCH >= 214
  std::strong_ordering operator<=>(const Stream& other) const {
    return id_ <=> other.id_;
  }
#endif

 private:
  Device device_;
  StreamId id_;
};

namespace cuda {

class CUDAStream {
 public:
  enum Unchecked { UNCHECKED };
  CUDAStream(Unchecked, Stream stream) : stream_(stream) {}
  cudaStream_t stream() const { return reinterpret_cast<cudaStream_t>(stream_.id()); }
  operator Stream() const { return stream_; }

 private:
  Stream stream_;
};

}  // namespace cuda
}  // namespace c10
