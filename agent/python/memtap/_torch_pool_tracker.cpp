// PyTorch's CUDA caching allocator -> memtap's pool C ABI (agent/memtap.h, layer PTA).
//
// Not built with memtap: memtap/_torch_pool.py compiles this file on the user's machine,
// once per torch version, against that torch's own headers, because what it uses is C++
// whose layout changes between versions (a std::function over TraceEntry, TraceEntry's
// fields, the stream's type). PyTorch >= 2.1 calls an attached trace tracker synchronously,
// on the thread that allocates or frees and under the device allocator's lock, for every
// trace entry, whether or not memory history is being recorded. So each block event is
// recorded on the thread that caused it, with that thread's owner labels, operator and
// stacks, and at its own time. The tracker must not call into PyTorch (the lock is held and
// the GIL may be too): it only forwards numbers to the agent, whose calls record and return.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>

namespace {

using PoolAlloc = void (*)(int, uint64_t, uint64_t, uint64_t);
using PoolFree = void (*)(int, uint64_t, uint64_t);
using PoolState = void (*)(int, uint64_t, uint64_t);

PoolAlloc g_alloc = nullptr;
PoolFree g_free_requested = nullptr;
PoolFree g_free_completed = nullptr;
PoolState g_state = nullptr;

// Per device: what the tracker has seen the pool hold, for memtap_pool_state after each
// segment change. Written under that device's allocator lock; atomics only because
// seed_device() runs from Python on another thread's time.
constexpr int kMaxDevices = 256;
std::atomic<int64_t> g_reserved[kMaxDevices];
std::atomic<int64_t> g_allocated[kMaxDevices];

template <typename Entry, typename = void>
struct HasDevice : std::false_type {};
template <typename Entry>
struct HasDevice<Entry, std::void_t<decltype(std::declval<const Entry&>().device_)>>
    : std::true_type {};

// The stream as the CUDA hooks record it (a cudaStream_t): the CUDA allocator's entries hold
// a cudaStream_t (PyTorch 2.1-2.9), c10's generic device allocator's a void* handle, and a
// c10::Stream, should an entry hold one, names its cudaStream_t.
template <typename S>
uint64_t stream_handle(const S& stream) {
  if constexpr (std::is_pointer_v<S>) {
    return reinterpret_cast<uint64_t>(stream);
  } else if constexpr (std::is_integral_v<S>) {
    return uint64_t(stream);
  } else {
    return reinterpret_cast<uint64_t>(
        c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, stream).stream());
  }
}

template <typename Entry>
int entry_device(const Entry& e) {
  if constexpr (HasDevice<Entry>::value) {
    return int(e.device_);
  } else {
    return int(c10::cuda::current_device());
  }
}

void note_segment(int device, int64_t delta) {
  if (device < 0 || device >= kMaxDevices) return;
  const int64_t reserved = g_reserved[device].fetch_add(delta) + delta;
  g_state(device, uint64_t(g_allocated[device].load()), uint64_t(reserved < 0 ? 0 : reserved));
}

void note_blocks(int device, int64_t delta) {
  if (device < 0 || device >= kMaxDevices) return;
  g_allocated[device].fetch_add(delta);
}

template <typename Entry>
void on_entry(const Entry& e) {
  using Action = decltype(e.action_);
  const int device = entry_device(e);
  const uint64_t addr = uint64_t(e.addr_);
  const int64_t size = int64_t(e.size_);
  switch (e.action_) {
    case Action::ALLOC:
      note_blocks(device, size);
      g_alloc(device, addr, uint64_t(size), stream_handle(e.stream_));
      break;
    case Action::FREE_REQUESTED:
      note_blocks(device, -size);
      g_free_requested(device, addr, stream_handle(e.stream_));
      break;
    case Action::FREE_COMPLETED:
      g_free_completed(device, addr, stream_handle(e.stream_));
      break;
    case Action::SEGMENT_ALLOC:
    case Action::SEGMENT_MAP:
      note_segment(device, size);
      break;
    case Action::SEGMENT_FREE:
    case Action::SEGMENT_UNMAP:
      note_segment(device, -size);
      break;
    default:
      // SNAPSHOT, OOM (the failed cudaMalloc is recorded by the CUDA hooks), USER_DEFINED.
      break;
  }
}

template <typename T>
T resolve(const char* name) {
  return reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
}

std::string g_error;

}  // namespace

extern "C" {

// Attaches the tracker to the caching allocator of every initialised device. Returns
// nullptr when attached, else why not (for one line on stderr). Call once, after CUDA
// initialised (torch.cuda._lazy_call); trackers cannot be detached.
const char* memtap_torch_pool_attach() {
  g_alloc = resolve<PoolAlloc>("memtap_pool_alloc");
  g_free_requested = resolve<PoolFree>("memtap_pool_free_requested");
  g_free_completed = resolve<PoolFree>("memtap_pool_free_completed");
  g_state = resolve<PoolState>("memtap_pool_state");
  if (!g_alloc || !g_free_requested || !g_free_completed || !g_state)
    return "the loaded memtap agent has no memtap_pool_* functions";
  try {
    using Entry = c10::cuda::CUDACachingAllocator::TraceEntry;
    c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(
        [](const Entry& e) { on_entry(e); });
  } catch (const std::exception& e) {
    g_error = e.what();
    const size_t line_end = g_error.find('\n');
    if (line_end != std::string::npos) g_error.resize(line_end);
    return g_error.c_str();
  }
  return nullptr;
}

// What the pool already held on `device` when the tracker was attached late (memtap.torch
// reads it from torch.cuda.memory_snapshot()), so that the states it reports add up.
void memtap_torch_pool_seed(int device, int64_t allocated, int64_t reserved) {
  if (device < 0 || device >= kMaxDevices) return;
  g_allocated[device].store(allocated);
  g_reserved[device].store(reserved);
}

}  // extern "C"
