// The stand-in driver's (libcuda.so.1) process-wide state, shared by driver.cpp (init,
// devices, contexts, streams, pools, cuGetProcAddress), driver_memory.cpp (allocations and
// virtual memory) and driver_kernels.cpp (modules, kernels, launches).
//
// Everything sits behind one mutex (g_lock): the stand-in is for tests, not speed. No state
// is allocated with malloc or mmap, which a preloaded memtap agent hooks: handles point into
// fixed arrays here, and the memory behind device pointers comes from raw mmap syscalls, as
// real device memory never shows up as host allocations. A handle is checked against its
// array before it is read, so an unknown handle is an error code, never a crash.
#pragma once

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "tests/fake_cuda/fake_cuda_api.h"

namespace fake_cuda {

constexpr int kDriverVersion = 13000;  // CUDA 13.0, as cuDriverGetVersion reports it
constexpr int kMaxDevices = 8;
constexpr size_t kGranularity = size_t(2) << 20;  // cuMemGetAllocationGranularity on an H100
constexpr size_t kPage = 4096;
constexpr int kMaxPools = 64;

inline size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// Raw syscalls: a preloaded agent exports mmap/munmap and would see these otherwise.
inline void* raw_mmap(void* addr, size_t len, int prot, int flags) {
  long r = syscall(SYS_mmap, addr, len, prot, flags | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return (r < 0 && r > -4096) ? nullptr : reinterpret_cast<void*>(r);
}
inline void raw_munmap(void* addr, size_t len) {
  syscall(SYS_munmap, addr, len);
}
inline bool raw_mprotect(void* addr, size_t len, int prot) {
  return syscall(SYS_mprotect, addr, len, prot) == 0;
}

extern pthread_mutex_t g_lock;
struct Lock {
  Lock() { pthread_mutex_lock(&g_lock); }
  ~Lock() { pthread_mutex_unlock(&g_lock); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;
};

// Handles point at these structs; each is aligned as a heap object would be.
//
// A primary context; CUcontext points at one of g_contexts.
struct alignas(16) Context {
  int device;
  int retains;  // active while > 0
};

struct alignas(16) Stream {
  bool live;
  int device;
};

struct alignas(16) Pool {
  bool live;
  bool is_default;
  int device;
};

extern bool g_initialized;
extern int g_device_count;
extern size_t g_capacity;           // bytes per device
extern size_t g_used[kMaxDevices];  // bytes allocated per device
extern Context g_contexts[kMaxDevices];
extern Pool g_pools[kMaxPools];  // the first kMaxDevices are the devices' default pools
extern __thread Context* t_current __attribute__((tls_model("initial-exec")));

// The element of `array` that `handle` points at, if it does and the element is live.
template <typename T, size_t N>
T* find_handle(T (&array)[N], const void* handle) {
  auto p = reinterpret_cast<uintptr_t>(handle);
  auto base = reinterpret_cast<uintptr_t>(&array[0]);
  if (p < base || p >= base + sizeof array || (p - base) % sizeof(T) != 0) return nullptr;
  T* t = reinterpret_cast<T*>(p);
  return t->live ? t : nullptr;
}

// The checks most calls start with (hold g_lock): initialised; a current context (whose
// device goes to *device).
CUresult initialized();
bool valid_device(int device);
CUresult current_device(int* device);
// The device whose work `stream` orders: the current context's for the default streams
// (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD), else the stream's; INVALID_HANDLE for an
// unknown or destroyed stream.
CUresult stream_device(CUstream stream, int* device);
Pool* find_pool(CUmemoryPool pool);

}  // namespace fake_cuda
