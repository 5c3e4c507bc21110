// The CUDA stand-ins of tests/fake_cuda/ against what CUDA 13 was seen to do on an H100, and
// memtap_test_cuda_pool against its own description; no memtap anywhere.
//
// The driver is loaded into this process (two devices of 64 MiB) and each test leaves it as
// it found it: no memory, no context current. A fresh driver, for what happens before cuInit,
// comes from dlmopen into a namespace of its own (whose libc has the environment the process
// started with, not the one set here). The runtime is loaded too (it finds the same
// driver by its soname), and runs in child processes as memtap_test_cuda_pool.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/e2e/process_runner.h"
#include "tests/fake_cuda/fake_cuda_api.h"

namespace {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kCapacity = 64 * kMiB;
const std::string kLibDir = FAKE_CUDA_LIB_DIR;

// ------------------------------------------------------------------------ the libraries

void* load(const std::string& file, Lmid_t namespace_id = LM_ID_BASE) {
  std::string path = kLibDir + "/" + file;
  void* lib = namespace_id == LM_ID_BASE ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)
                                         : dlmopen(namespace_id, path.c_str(), RTLD_NOW);
  EXPECT_NE(lib, nullptr) << path << ": " << dlerror();
  return lib;
}

// The driver every test but the fresh-driver ones uses; the environment is set before it is
// loaded and initialised.
void* driver_lib() {
  static void* lib = [] {
    setenv("MEMTAP_FAKE_CUDA_DEVICES", "2", 1);
    setenv("MEMTAP_FAKE_CUDA_CAPACITY", std::to_string(kCapacity).c_str(), 1);
    return load("libcuda.so.1");
  }();
  return lib;
}

void* symbol(void* lib, const char* name) {
  void* fn = lib ? dlsym(lib, name) : nullptr;
  EXPECT_NE(fn, nullptr) << name;
  return fn;
}

// A driver function of a given library, or of driver_lib(): DRV(cuMemAlloc_v2)(&p, size).
#define DRV_OF(lib, name) reinterpret_cast<decltype(&name)>(symbol(lib, #name))
#define DRV(name) DRV_OF(driver_lib(), name)

// The runtime, in this process; it dlopens the driver above by its soname.
void* runtime_lib() {
  static void* lib = [] {
    driver_lib();
    return load("libcudart.so.13");
  }();
  return lib;
}
#define RT(name) reinterpret_cast<decltype(&name)>(symbol(runtime_lib(), #name))

// Tests of the driver run with device 0's primary context current and leave none current.
class FakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(DRV(cuInit)(0), CUDA_SUCCESS);
    ASSERT_EQ(DRV(cuDevicePrimaryCtxRetain)(&ctx0_, 0), CUDA_SUCCESS);
    ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx0_), CUDA_SUCCESS);
    ASSERT_EQ(free_bytes(), kCapacity) << "an earlier test left memory allocated";
  }
  void TearDown() override {
    EXPECT_EQ(free_bytes(), kCapacity) << "the test left memory allocated";
    DRV(cuCtxSetCurrent)(nullptr);
    DRV(cuDevicePrimaryCtxRelease_v2)(0);
  }

  static size_t free_bytes() {
    size_t free = 0, total = 0;
    EXPECT_EQ(DRV(cuMemGetInfo_v2)(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(total, kCapacity);
    return free;
  }

  CUcontext ctx0_ = nullptr;
};

// ------------------------------------------------------------------------------ the driver

TEST(FakeDriverFresh, EveryCallButAFewNeedsCuInitThenAContext) {
  void* lib = load("libcuda.so.1", LM_ID_NEWLM);
  ASSERT_NE(lib, nullptr);
  CUdeviceptr dptr = 77;
  CUdevice device = 77;
  int count = 0;
  EXPECT_EQ(DRV_OF(lib, cuMemAlloc_v2)(&dptr, 1024), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(dptr, 77u);
  EXPECT_EQ(DRV_OF(lib, cuCtxGetDevice)(&device), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(DRV_OF(lib, cuDeviceGetCount)(&count), CUDA_ERROR_NOT_INITIALIZED);
  CUmemGenericAllocationHandle handle = 0;
  CUmemAllocationProp prop = {};
  EXPECT_EQ(DRV_OF(lib, cuMemCreate)(&handle, 2 * kMiB, &prop, 0), CUDA_ERROR_NOT_INITIALIZED);

  // What works before cuInit.
  int version = 0;
  EXPECT_EQ(DRV_OF(lib, cuDriverGetVersion)(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  EXPECT_EQ(DRV_OF(lib, cuGetProcAddress_v2)("cuMemAlloc", &fn, 3020, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(fn, dlsym(lib, "cuMemAlloc_v2"));
  const char* name = nullptr;
  EXPECT_EQ(DRV_OF(lib, cuGetErrorName)(CUDA_ERROR_NOT_INITIALIZED, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_NOT_INITIALIZED");

  EXPECT_EQ(DRV_OF(lib, cuInit)(1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(DRV_OF(lib, cuInit)(0), CUDA_SUCCESS);
  EXPECT_EQ(DRV_OF(lib, cuDeviceGetCount)(&count), CUDA_SUCCESS);
  EXPECT_GE(count, 1);  // a namespace of its own has the environment the process started with
  // Initialised, but no context is current on this thread.
  EXPECT_EQ(DRV_OF(lib, cuMemAlloc_v2)(&dptr, 1024), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(DRV_OF(lib, cuCtxGetDevice)(&device), CUDA_ERROR_INVALID_CONTEXT);
  size_t free = 0, total = 0;
  EXPECT_EQ(DRV_OF(lib, cuMemGetInfo_v2)(&free, &total), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx = reinterpret_cast<CUcontext>(&count);
  EXPECT_EQ(DRV_OF(lib, cuCtxGetCurrent)(&ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, nullptr);
  dlclose(lib);
}

struct Lookup {
  const char* symbol;
  int version;
  cuuint64_t flags;
  const char* exported;  // the function it must return
};

constexpr cuuint64_t kLegacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

TEST_F(FakeDriver, ProcAddressGivesTheVariantOfTheVersionAndFlags) {
  // Each as seen on an H100, or as the real runtime asks.
  const Lookup lookups[] = {
      {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
      {"cuMemAlloc", 2000, 0, "cuMemAlloc"},
      {"cuMemAlloc", 13000, 0, "cuMemAlloc_v2"},
      {"cuMemAlloc", 12000, kPerThread, "cuMemAlloc_v2"},
      {"cuMemFree", 3020, 0, "cuMemFree_v2"},
      {"cuMemAllocHost", 3020, 0, "cuMemAllocHost_v2"},
      {"cuMemHostAlloc", 2020, 0, "cuMemHostAlloc"},
      {"cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2"},
      {"cuMemAllocAsync", 11020, kPerThread, "cuMemAllocAsync_ptsz"},
      {"cuMemCreate", 12000, 0, "cuMemCreate"},
      {"cuLaunchKernel", 4000, 0, "cuLaunchKernel"},
      {"cuLaunchKernel", 7000, kPerThread, "cuLaunchKernel_ptsz"},
      {"cuLaunchKernel", 12000, kLegacy, "cuLaunchKernel"},
      {"cuLaunchKernel", 12000, kLegacy | kPerThread, "cuLaunchKernel_ptsz"},
      {"cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx"},
      {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
      {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
      {"cuCtxGetDevice", 12000, 0, "cuCtxGetDevice"},
      {"cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"},
      {"cuStreamDestroy", 12000, 0, "cuStreamDestroy_v2"},
      {"cuDevicePrimaryCtxRelease", 12000, 0, "cuDevicePrimaryCtxRelease_v2"},
      {"cuFuncGetName", 12030, 0, "cuFuncGetName"},
  };
  for (const Lookup& l : lookups) {
    SCOPED_TRACE(std::string(l.symbol) + " " + std::to_string(l.version) + " flags " +
                 std::to_string(l.flags));
    void* fn = nullptr;
    auto status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    EXPECT_EQ(DRV(cuGetProcAddress_v2)(l.symbol, &fn, l.version, l.flags, &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
    EXPECT_EQ(fn, dlsym(driver_lib(), l.exported));
    fn = nullptr;
    EXPECT_EQ(DRV(cuGetProcAddress)(l.symbol, &fn, l.version, l.flags), CUDA_SUCCESS);
    EXPECT_EQ(fn, dlsym(driver_lib(), l.exported));
  }
}

TEST_F(FakeDriver, ProcAddressMissesAsOnAnH100) {
  struct Miss {
    const char* symbol;
    int version;
    cuuint64_t flags;
    CUdriverProcAddressQueryResult status;
  };
  const Miss misses[] = {
      {"cuNoSuchFunction", 12000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
      {"cuMemAlloc_v2", 12000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},  // full names miss
      {"cuMemAlloc", 1000, 0, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
      {"cuLaunchKernel", 4000, kPerThread, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
      {"cuFuncGetName", 12000, 0, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
  };
  for (const Miss& m : misses) {
    SCOPED_TRACE(std::string(m.symbol) + " " + std::to_string(m.version));
    void* fn = &fn;
    auto status = CU_GET_PROC_ADDRESS_SUCCESS;
    EXPECT_EQ(DRV(cuGetProcAddress_v2)(m.symbol, &fn, m.version, m.flags, &status), CUDA_SUCCESS);
    EXPECT_EQ(fn, nullptr);
    EXPECT_EQ(status, m.status);
    fn = &fn;  // the legacy form says NOT_FOUND and leaves *pfn alone
    EXPECT_EQ(DRV(cuGetProcAddress)(m.symbol, &fn, m.version, m.flags), CUDA_ERROR_NOT_FOUND);
    EXPECT_EQ(fn, &fn);
  }
  // A version above the driver's, or an unknown flag: INVALID_VALUE, outputs untouched.
  void* fn = &fn;
  auto status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  EXPECT_EQ(DRV(cuGetProcAddress_v2)("cuMemAlloc", &fn, 13010, 0, &status),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuGetProcAddress_v2)("cuMemAlloc", &fn, 12000, 4, &status),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuGetProcAddress)("cuMemAlloc", &fn, 13010, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fn, &fn);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST_F(FakeDriver, ProcAddressFindsItselfAndWorksThroughWhatItReturns) {
  void* fn = nullptr;
  ASSERT_EQ(DRV(cuGetProcAddress_v2)("cuGetProcAddress", &fn, 12000, 0, nullptr), CUDA_SUCCESS);
  auto get_proc_address = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(fn);
  void* alloc = nullptr;
  ASSERT_EQ(get_proc_address("cuMemAlloc", &alloc, 3020, 0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(alloc, dlsym(driver_lib(), "cuMemAlloc_v2"));
  CUdeviceptr dptr = 0;
  ASSERT_EQ(reinterpret_cast<decltype(&cuMemAlloc_v2)>(alloc)(&dptr, 4096), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFree_v2)(dptr), CUDA_SUCCESS);
}

TEST_F(FakeDriver, DeviceMemoryIsAlignedDistinctWritableAndCounted) {
  const size_t sizes[] = {1, 100, 3000, kMiB, 256};
  std::vector<CUdeviceptr> blocks;
  size_t total = 0;
  for (size_t size : sizes) {
    CUdeviceptr dptr = 0;
    ASSERT_EQ(DRV(cuMemAlloc_v2)(&dptr, size), CUDA_SUCCESS);
    EXPECT_EQ(dptr % 256, 0u);
    for (size_t i = 0; i < blocks.size(); i++)  // no overlap with any earlier block
      EXPECT_TRUE(dptr + size <= blocks[i] || blocks[i] + sizes[i] <= dptr);
    memset(reinterpret_cast<void*>(dptr), 0xab, size);
    blocks.push_back(dptr);
    total += size;
    EXPECT_EQ(free_bytes(), kCapacity - total);
  }
  CUdeviceptr dptr = 0;
  EXPECT_EQ(DRV(cuMemAlloc_v2)(&dptr, 0), CUDA_ERROR_INVALID_VALUE);
  for (CUdeviceptr b : blocks) EXPECT_EQ(DRV(cuMemFree_v2)(b), CUDA_SUCCESS);
}

TEST_F(FakeDriver, AllocationPastTheCapacityFailsAndAllocatesNothing) {
  CUdeviceptr big = 0;
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&big, 40 * kMiB), CUDA_SUCCESS);
  CUdeviceptr dptr = 0x1234;
  size_t pitch = 0;
  CUmemGenericAllocationHandle handle = 0;
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EXPECT_EQ(DRV(cuMemAlloc_v2)(&dptr, 30 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(DRV(cuMemAllocManaged)(&dptr, 30 * kMiB, CU_MEM_ATTACH_GLOBAL),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(DRV(cuMemAllocPitch_v2)(&dptr, &pitch, kMiB, 30, 4), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(DRV(cuMemAllocAsync)(&dptr, 30 * kMiB, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(DRV(cuMemCreate)(&handle, 32 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(dptr, 0x1234u);
  EXPECT_EQ(free_bytes(), 24 * kMiB);
  // Pinned host memory does not count against the device.
  void* host = nullptr;
  ASSERT_EQ(DRV(cuMemHostAlloc)(&host, 30 * kMiB, 0), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), 24 * kMiB);
  // Exactly what is left fits.
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&dptr, 24 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), 0u);
  EXPECT_EQ(DRV(cuMemFree_v2)(dptr), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFreeHost)(host), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFree_v2)(big), CUDA_SUCCESS);
}

TEST_F(FakeDriver, FreeingWhatWasNotAllocatedIsInvalidValue) {
  CUdeviceptr dptr = 0;
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&dptr, 4096), CUDA_SUCCESS);
  void* host = nullptr;
  ASSERT_EQ(DRV(cuMemAllocHost_v2)(&host, 4096), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFree_v2)(0x1234), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemFree_v2)(dptr + 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemFree_v2)(reinterpret_cast<CUdeviceptr>(host)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemFreeHost)(reinterpret_cast<void*>(dptr)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemFree_v2)(0), CUDA_SUCCESS);  // as on an H100
  EXPECT_EQ(DRV(cuMemFreeHost)(nullptr), CUDA_SUCCESS);
  void* nothing = &nothing;
  EXPECT_EQ(DRV(cuMemHostAlloc)(&nothing, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(nothing, nullptr);
  EXPECT_EQ(DRV(cuMemFree_v2)(dptr), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFree_v2)(dptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemFreeHost)(host), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFreeHost)(host), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeDriver, TheCurrentContextIsPerThread) {
  std::thread([&] {
    CUdeviceptr dptr = 0;
    CUdevice device = -1;
    CUcontext ctx = ctx0_;
    EXPECT_EQ(DRV(cuCtxGetCurrent)(&ctx), CUDA_SUCCESS);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_EQ(DRV(cuMemAlloc_v2)(&dptr, 4096), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(DRV(cuCtxGetDevice)(&device), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext ctx1 = nullptr;
    ASSERT_EQ(DRV(cuDevicePrimaryCtxRetain)(&ctx1, 1), CUDA_SUCCESS);
    ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx1), CUDA_SUCCESS);
    EXPECT_EQ(DRV(cuCtxGetDevice)(&device), CUDA_SUCCESS);
    EXPECT_EQ(device, 1);
    EXPECT_EQ(DRV(cuCtxGetDevice_v2)(&device, ctx0_), CUDA_SUCCESS);
    EXPECT_EQ(device, 0);
    EXPECT_EQ(DRV(cuDevicePrimaryCtxRelease_v2)(1), CUDA_SUCCESS);
  }).join();
  CUdevice device = -1;
  EXPECT_EQ(DRV(cuCtxGetDevice)(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(DRV(cuCtxSetCurrent)(reinterpret_cast<CUcontext>(&device)), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(DRV(cuDeviceGet)(&device, 2), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(FakeDriver, TwoDevicesCountTheirOwnMemory) {
  CUcontext ctx1 = nullptr;
  ASSERT_EQ(DRV(cuDevicePrimaryCtxRetain)(&ctx1, 1), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx1), CUDA_SUCCESS);
  CUdeviceptr on1 = 0;
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&on1, kMiB), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), kCapacity - kMiB);
  ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx0_), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), kCapacity);
  CUdeviceptr on0 = 0;
  ASSERT_EQ(DRV(cuMemAlloc_v2)(&on0, kMiB), CUDA_SUCCESS);
  EXPECT_NE(on0, on1);
  EXPECT_EQ(DRV(cuMemFree_v2)(on1), CUDA_SUCCESS);  // device 1's block, device 0 current
  EXPECT_EQ(DRV(cuMemFree_v2)(on0), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx1), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), kCapacity);
  ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx0_), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuDevicePrimaryCtxRelease_v2)(1), CUDA_SUCCESS);
}

TEST_F(FakeDriver, StreamsAreCheckedHandles) {
  CUstream stream = nullptr;
  ASSERT_EQ(DRV(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr dptr = 0;
  ASSERT_EQ(DRV(cuMemAllocAsync)(&dptr, 4096, stream), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), kCapacity - 4096);  // at once
  EXPECT_EQ(DRV(cuMemFreeAsync_ptsz)(dptr, stream), CUDA_SUCCESS);
  for (CUstream s : {CUstream(nullptr), CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, stream})
    EXPECT_EQ(DRV(cuStreamSynchronize)(s), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemAllocAsync)(&dptr, 0, stream), CUDA_SUCCESS);  // as on an H100
  EXPECT_EQ(dptr, 0u);

  int not_a_stream = 0;
  auto* bogus = reinterpret_cast<CUstream>(&not_a_stream);
  EXPECT_EQ(DRV(cuMemAllocAsync)(&dptr, 4096, bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuMemFreeAsync)(0, bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuStreamSynchronize)(bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuStreamDestroy_v2)(bogus), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuStreamSynchronize_ptsz)(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuMemAllocAsync)(&dptr, 4096, stream), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(FakeDriver, AStreamAndAPoolAllocateOnTheirOwnDevice) {
  CUcontext ctx1 = nullptr;
  ASSERT_EQ(DRV(cuDevicePrimaryCtxRetain)(&ctx1, 1), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx1), CUDA_SUCCESS);
  CUstream stream1 = nullptr;
  ASSERT_EQ(DRV(cuStreamCreate)(&stream1, 0), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx0_), CUDA_SUCCESS);
  CUmemoryPool pool1 = nullptr, pool0 = nullptr;
  ASSERT_EQ(DRV(cuDeviceGetDefaultMemPool)(&pool1, 1), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuDeviceGetDefaultMemPool)(&pool0, 0), CUDA_SUCCESS);
  EXPECT_NE(pool0, pool1);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(DRV(cuMemAllocAsync)(&a, kMiB, stream1), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuMemAllocFromPoolAsync)(&b, kMiB, pool1, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), kCapacity);  // device 0 has nothing allocated
  ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx1), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), kCapacity - 2 * kMiB);
  EXPECT_EQ(DRV(cuMemFreeAsync)(a, stream1), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemFreeAsync)(b, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuStreamDestroy_v2)(stream1), CUDA_SUCCESS);

  CUmemPoolProps props = {};
  EXPECT_EQ(DRV(cuMemPoolCreate)(&pool1, &props), CUDA_ERROR_INVALID_VALUE);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
  CUmemoryPool created = nullptr;
  ASSERT_EQ(DRV(cuMemPoolCreate)(&created, &props), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemPoolDestroy)(pool1), CUDA_ERROR_INVALID_VALUE);  // a default pool
  EXPECT_EQ(DRV(cuMemPoolDestroy)(created), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemAllocFromPoolAsync)(&a, kMiB, created, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(DRV(cuCtxSetCurrent)(ctx0_), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuDevicePrimaryCtxRelease_v2)(1), CUDA_SUCCESS);
}

TEST_F(FakeDriver, VirtualMemoryRefusesWhatAnH100Refuses) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  size_t granularity = 0;
  ASSERT_EQ(
      DRV(cuMemGetAllocationGranularity)(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
      CUDA_SUCCESS);
  EXPECT_EQ(granularity, 2 * kMiB);
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(DRV(cuMemCreate)(&handle, kMiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr va = 0;
  EXPECT_EQ(DRV(cuMemAddressReserve)(&va, kMiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  prop.location.id = 5;
  EXPECT_EQ(DRV(cuMemCreate)(&handle, 2 * kMiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
  prop.location.id = 0;
  ASSERT_EQ(DRV(cuMemCreate)(&handle, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), kCapacity - 2 * kMiB);  // counted from creation on
  ASSERT_EQ(DRV(cuMemAddressReserve)(&va, 8 * kMiB, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % (2 * kMiB), 0u);

  EXPECT_EQ(DRV(cuMemMap)(va + kMiB, 2 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemMap)(va + 8 * kMiB, 2 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(DRV(cuMemMap)(va, 2 * kMiB, 0, handle, 0), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemMap)(va, 2 * kMiB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc access = {prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  EXPECT_EQ(DRV(cuMemSetAccess)(va, 4 * kMiB, &access, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(DRV(cuMemSetAccess)(va, 2 * kMiB, &access, 1), CUDA_SUCCESS);
  memset(reinterpret_cast<void*>(va), 0xcd, 2 * kMiB);
  EXPECT_EQ(DRV(cuMemAddressFree)(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);  // still mapped

  EXPECT_EQ(DRV(cuMemRelease)(handle), CUDA_SUCCESS);  // while mapped: freed at the unmap
  EXPECT_EQ(free_bytes(), kCapacity - 2 * kMiB);
  EXPECT_EQ(DRV(cuMemUnmap)(va, 2 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes(), kCapacity);
  EXPECT_EQ(DRV(cuMemUnmap)(va, 2 * kMiB), CUDA_SUCCESS);  // nothing mapped there: fine
  EXPECT_EQ(DRV(cuMemRelease)(handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(DRV(cuMemAddressFree)(va, 8 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemAddressFree)(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeDriver, VirtualMemoryUnmapsWholeMappingsOnly) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemGenericAllocationHandle small = 0, large = 0;
  ASSERT_EQ(DRV(cuMemCreate)(&small, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuMemCreate)(&large, 4 * kMiB, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr va = 0;
  ASSERT_EQ(DRV(cuMemAddressReserve)(&va, 16 * kMiB, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuMemMap)(va, 2 * kMiB, 0, small, 0), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuMemMap)(va + 2 * kMiB, 4 * kMiB, 0, large, 0), CUDA_SUCCESS);
  CUmemAccessDesc access = {prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  EXPECT_EQ(DRV(cuMemSetAccess)(va, 6 * kMiB, &access, 1), CUDA_SUCCESS);         // across both
  EXPECT_EQ(DRV(cuMemUnmap)(va + 2 * kMiB, 2 * kMiB), CUDA_ERROR_INVALID_VALUE);  // half
  EXPECT_EQ(DRV(cuMemUnmap)(va, 6 * kMiB), CUDA_SUCCESS);                         // both at once
  EXPECT_EQ(DRV(cuMemRelease)(small), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemRelease)(large), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuMemAddressFree)(va, 16 * kMiB), CUDA_SUCCESS);
}

TEST_F(FakeDriver, KernelsKeepTheirNames) {
  CUmodule module = nullptr;
  ASSERT_EQ(DRV(cuModuleLoadData)(&module, "any image"), CUDA_SUCCESS);
  CUfunction f = nullptr, again = nullptr;
  ASSERT_EQ(DRV(cuModuleGetFunction)(&f, module, "_Z9addKernelPfS_i"), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuModuleGetFunction)(&again, module, "_Z9addKernelPfS_i"), CUDA_SUCCESS);
  EXPECT_EQ(f, again);
  const char* name = nullptr;
  ASSERT_EQ(DRV(cuFuncGetName)(&name, f), CUDA_SUCCESS);
  EXPECT_STREQ(name, "_Z9addKernelPfS_i");
  EXPECT_EQ(DRV(cuFuncGetName)(&name, nullptr), CUDA_ERROR_INVALID_VALUE);

  float data = 0;
  float* arg = &data;
  void* args[] = {&arg};
  EXPECT_EQ(DRV(cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuLaunchKernel_ptsz)(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuLaunchKernel)(nullptr, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuLaunchKernel)(reinterpret_cast<CUfunction>(&data), 1, 1, 1, 32, 1, 1, 0, nullptr,
                                args, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuLaunchKernel)(f, 0, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  CUlaunchConfig config = {};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  config.hStream = reinterpret_cast<CUstream>(&data);
  EXPECT_EQ(DRV(cuLaunchKernelEx)(&config, f, args, nullptr), CUDA_ERROR_INVALID_HANDLE);
  config.hStream = CU_STREAM_PER_THREAD;
  EXPECT_EQ(DRV(cuLaunchKernelEx_ptsz)(&config, f, args, nullptr), CUDA_SUCCESS);

  // A library's kernels (the runtime's cudaKernel_t) are not functions, but launch as ones.
  CUlibrary library = nullptr;
  ASSERT_EQ(DRV(cuLibraryLoadData)(&library, "any image", nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel kernel = nullptr;
  ASSERT_EQ(DRV(cuLibraryGetKernel)(&kernel, library, "fake_add_kernel"), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuKernelGetName)(&name, kernel), CUDA_SUCCESS);
  EXPECT_STREQ(name, "fake_add_kernel");
  EXPECT_EQ(DRV(cuFuncGetName)(&name, reinterpret_cast<CUfunction>(kernel)),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuKernelGetName)(&name, reinterpret_cast<CUkernel>(f)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuLaunchKernel)(reinterpret_cast<CUfunction>(kernel), 1, 1, 1, 32, 1, 1, 0, nullptr,
                                args, nullptr),
            CUDA_SUCCESS);
  CUfunction of_kernel = nullptr;
  ASSERT_EQ(DRV(cuKernelGetFunction)(&of_kernel, kernel), CUDA_SUCCESS);
  ASSERT_EQ(DRV(cuFuncGetName)(&name, of_kernel), CUDA_SUCCESS);
  EXPECT_STREQ(name, "fake_add_kernel");

  EXPECT_EQ(DRV(cuModuleUnload)(module), CUDA_SUCCESS);
  EXPECT_EQ(DRV(cuFuncGetName)(&name, f), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(DRV(cuLibraryUnload)(library), CUDA_SUCCESS);
}

TEST(FakeDriverErrors, NamesAndTextsAreTheRealOnes) {
  const char* text = nullptr;
  EXPECT_EQ(DRV(cuGetErrorName)(CUDA_ERROR_NOT_FOUND, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_NOT_FOUND");
  EXPECT_EQ(DRV(cuGetErrorString)(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "out of memory");
  EXPECT_EQ(DRV(cuGetErrorName)(CUresult(12345), &text), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(text, nullptr);
}

// ------------------------------------------------------------------------ the libraries' ELF

struct ElfDynamic {
  std::string soname;
  std::vector<std::string> needed;
  std::vector<std::string> undefined;  // undefined dynamic symbols
};

// The dynamic section and symbols of a 64-bit shared library, read from its file.
ElfDynamic read_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ElfDynamic out;
  if (file.size() < sizeof(Elf64_Ehdr)) return out;
  auto* header = reinterpret_cast<const Elf64_Ehdr*>(file.data());
  auto* sections = reinterpret_cast<const Elf64_Shdr*>(file.data() + header->e_shoff);
  auto string_at = [&](const Elf64_Shdr& strtab, size_t offset) {
    return std::string(file.data() + strtab.sh_offset + offset);
  };
  for (int i = 0; i < header->e_shnum; i++) {
    const Elf64_Shdr& s = sections[i];
    const Elf64_Shdr& strtab = sections[s.sh_link];
    if (s.sh_type == SHT_DYNAMIC) {
      auto* dyn = reinterpret_cast<const Elf64_Dyn*>(file.data() + s.sh_offset);
      for (size_t j = 0; j < s.sh_size / sizeof(Elf64_Dyn); j++) {
        if (dyn[j].d_tag == DT_NEEDED) out.needed.push_back(string_at(strtab, dyn[j].d_un.d_val));
        if (dyn[j].d_tag == DT_SONAME) out.soname = string_at(strtab, dyn[j].d_un.d_val);
      }
    } else if (s.sh_type == SHT_DYNSYM) {
      auto* sym = reinterpret_cast<const Elf64_Sym*>(file.data() + s.sh_offset);
      for (size_t j = 1; j < s.sh_size / sizeof(Elf64_Sym); j++)
        if (sym[j].st_shndx == SHN_UNDEF)
          out.undefined.push_back(string_at(strtab, sym[j].st_name));
    }
  }
  return out;
}

bool is_driver_function(const std::string& name) {
  return name.size() > 2 && name.compare(0, 2, "cu") == 0 && isupper(name[2]);
}

TEST(FakeCudaLibraries, HaveTheRealSonamesAndTheRuntimeDoesNotLinkTheDriver) {
  ElfDynamic driver = read_elf(kLibDir + "/libcuda.so.1");
  EXPECT_EQ(driver.soname, "libcuda.so.1");
  ElfDynamic runtime = read_elf(kLibDir + "/libcudart.so.13");
  EXPECT_EQ(runtime.soname, "libcudart.so.13");
  for (const std::string& lib : runtime.needed) EXPECT_EQ(lib.find("libcuda."), std::string::npos);
  for (const std::string& name : runtime.undefined)
    EXPECT_FALSE(is_driver_function(name)) << "the runtime calls " << name << " by symbol";
}

// ----------------------------------------------------------------------------- the runtime

TEST(FakeRuntime, ErrorsAreTheRealRuntimes) {
  void* p = &p;
  EXPECT_EQ(RT(cudaMalloc)(&p, 0), cudaSuccess);  // as on an H100: no memory, no error
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(RT(cudaFree)(nullptr), cudaSuccess);
  EXPECT_EQ(RT(cudaFree)(&p), cudaErrorInvalidValue);
  EXPECT_EQ(RT(cudaSetDevice)(7), cudaErrorInvalidDevice);
  // The last error is the last failure, until read.
  EXPECT_EQ(RT(cudaPeekAtLastError)(), cudaErrorInvalidDevice);
  EXPECT_EQ(RT(cudaGetLastError)(), cudaErrorInvalidDevice);
  EXPECT_EQ(RT(cudaGetLastError)(), cudaSuccess);
  EXPECT_EQ(RT(cudaMalloc)(&p, 2 * kCapacity), cudaErrorMemoryAllocation);
  EXPECT_EQ(RT(cudaGetLastError)(), cudaErrorMemoryAllocation);
  EXPECT_STREQ(RT(cudaGetErrorName)(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
  EXPECT_STREQ(RT(cudaGetErrorString)(cudaErrorMemoryAllocation), "out of memory");
  EXPECT_STREQ(RT(cudaGetErrorName)(cudaError_t(12345)), "unrecognized error code");
  EXPECT_EQ(RT(cudaMallocManaged)(&p, 0, cudaMemAttachGlobal), cudaSuccess);  // as on an H100
  EXPECT_EQ(p, nullptr);
  size_t pitch = 7;
  EXPECT_EQ(RT(cudaMallocPitch)(&p, &pitch, 0, 10), cudaSuccess);
  EXPECT_EQ(pitch, 0u);
  EXPECT_EQ(RT(cudaMallocHost)(&p, 0), cudaSuccess);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(RT(cudaFreeHost)(nullptr), cudaSuccess);
  EXPECT_EQ(RT(cudaGetLastError)(), cudaSuccess);
  RT(cudaDeviceSynchronize)();
}

}  // namespace

// A kernel's host function, in the dynamic symbol table (the test is linked with -rdynamic).
extern "C" __attribute__((noinline)) void fake_cuda_test_kernel(int* out) {
  *out = 1;
}

namespace {

TEST(FakeRuntime, KernelsAreHostFunctionsOrTheirCudaKernels) {
  const void* host = reinterpret_cast<const void*>(&fake_cuda_test_kernel);
  cudaKernel_t kernel = nullptr, again = nullptr;
  ASSERT_EQ(RT(__cudaGetKernel)(&kernel, host), cudaSuccess);
  ASSERT_EQ(RT(cudaGetKernel)(&again, host), cudaSuccess);
  EXPECT_EQ(kernel, again);
  EXPECT_NE(static_cast<const void*>(kernel), host);
  const char* name = nullptr;
  ASSERT_EQ(RT(cudaFuncGetName)(&name, host), cudaSuccess);
  EXPECT_STREQ(name, "fake_cuda_test_kernel");
  ASSERT_EQ(RT(cudaFuncGetName)(&name, kernel), cudaSuccess);
  EXPECT_STREQ(name, "fake_cuda_test_kernel");
  ASSERT_EQ(DRV(cuKernelGetName)(&name, reinterpret_cast<CUkernel>(kernel)), CUDA_SUCCESS);
  EXPECT_STREQ(name, "fake_cuda_test_kernel");
  // cudaGetFuncBySymbol takes the host function only, as on an H100.
  cudaFunction_t function = nullptr;
  ASSERT_EQ(RT(cudaGetFuncBySymbol)(&function, host), cudaSuccess);
  ASSERT_EQ(DRV(cuFuncGetName)(&name, reinterpret_cast<CUfunction>(function)), CUDA_SUCCESS);
  EXPECT_STREQ(name, "fake_cuda_test_kernel");
  EXPECT_EQ(RT(cudaGetFuncBySymbol)(&function, kernel), cudaErrorInvalidDeviceFunction);

  int out = 0;
  int* arg = &out;
  void* args[] = {&arg};
  const dim3 one = {1, 1, 1};
  EXPECT_EQ(RT(cudaLaunchKernel)(host, one, one, args, 0, nullptr), cudaSuccess);
  EXPECT_EQ(RT(cudaLaunchKernel)(kernel, one, one, args, 0, nullptr), cudaSuccess);
  EXPECT_EQ(RT(__cudaLaunchKernel)(kernel, one, one, args, 0, nullptr), cudaSuccess);
  EXPECT_EQ(RT(__cudaLaunchKernel_ptsz)(kernel, one, one, args, 0, nullptr), cudaSuccess);
  cudaLaunchConfig_t config = {};
  config.gridDim = config.blockDim = one;
  EXPECT_EQ(RT(cudaLaunchKernelExC)(&config, host, args), cudaSuccess);
  EXPECT_EQ(out, 0);  // kernels do not run

  // What is no kernel: as on an H100.
  int not_a_kernel = 0;
  EXPECT_EQ(RT(cudaLaunchKernel)(&not_a_kernel, one, one, args, 0, nullptr),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(RT(cudaGetKernel)(&again, &not_a_kernel), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(RT(cudaGetFuncBySymbol)(&function, &not_a_kernel), cudaErrorInvalidDeviceFunction);
  RT(cudaGetLastError)();
}

TEST(FakeRuntime, DriverEntryPointsForwardToCuGetProcAddress) {
  void* fn = &fn;
  auto status = cudaDriverEntryPointSymbolNotFound;
  EXPECT_EQ(
      RT(cudaGetDriverEntryPointByVersion)("cuMemCreate", &fn, 12000, cudaEnableDefault, &status),
      cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointSuccess);
  EXPECT_EQ(fn, dlsym(driver_lib(), "cuMemCreate"));
  EXPECT_EQ(RT(cudaGetDriverEntryPointByVersion)("cuNoSuchFunction", &fn, 12000, 0, &status),
            cudaSuccess);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(status, cudaDriverEntryPointSymbolNotFound);
  EXPECT_EQ(RT(cudaGetDriverEntryPointByVersion)("cuMemCreate", &fn, 10000, 0, &status),
            cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointVersionNotSufficent);
  fn = &fn;
  EXPECT_EQ(RT(cudaGetDriverEntryPointByVersion)("cuMemAlloc", &fn, 13010, 0, &status),
            cudaErrorInvalidValue);
  EXPECT_EQ(fn, &fn);
  RT(cudaGetLastError)();
  // Without a version, the runtime's own (13000): CUDA 13's cuCtxGetDevice.
  EXPECT_EQ(RT(cudaGetDriverEntryPoint)("cuCtxGetDevice", &fn, cudaEnableDefault, nullptr),
            cudaSuccess);
  EXPECT_EQ(fn, dlsym(driver_lib(), "cuCtxGetDevice_v2"));
  EXPECT_EQ(
      RT(cudaGetDriverEntryPoint)("cuLaunchKernel", &fn, cudaEnablePerThreadDefaultStream, nullptr),
      cudaSuccess);
  EXPECT_EQ(fn, dlsym(driver_lib(), "cuLaunchKernel_ptsz"));
}

// ------------------------------------------------------------------ memtap_test_cuda_pool

using memtap::e2e::ProcessResult;

ProcessResult run_program(const std::vector<std::string>& args,
                          std::vector<std::string> env = {"MEMTAP_FAKE_CUDA_DEVICES=2"}) {
  memtap::e2e::ProcessSpec spec;
  spec.argv = {CUDA_POOL_PROG};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env_set = std::move(env);
  // The stand-ins before any CUDA libraries the environment points at.
  spec.env_set.push_back("LD_LIBRARY_PATH=" + kLibDir);
  spec.env_unset = {"LD_PRELOAD", "MEMTAP_FAKE_CUDA_CAPACITY"};
  std::string error;
  auto process = memtap::e2e::Process::start(spec, &error);
  if (!process) {
    ProcessResult failed;
    failed.err = error;
    return failed;
  }
  return process->wait(std::chrono::seconds(30));
}

// One output line: its first word ("expect", "did"), its second (the event or fact), keys.
struct Line {
  std::string prefix;
  std::string what;
  std::map<std::string, std::string> keys;
};

std::vector<Line> parse(const std::string& out) {
  std::vector<Line> lines;
  std::istringstream in(out);
  for (std::string text; std::getline(in, text);) {
    std::istringstream words(text);
    Line line;
    words >> line.prefix >> line.what;
    for (std::string kv; words >> kv;) {
      size_t eq = kv.find('=');
      EXPECT_NE(eq, std::string::npos) << text;
      if (eq != std::string::npos) line.keys[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    EXPECT_TRUE(line.prefix == "expect" || line.prefix == "did") << text;
    EXPECT_TRUE(line.keys.count("pid") && line.keys.count("tid")) << text;
    lines.push_back(line);
  }
  return lines;
}

// What each scenario must print: counts of expect lines by event.
struct ScenarioCase {
  const char* name;
  std::map<std::string, int> events;
};

void PrintTo(const ScenarioCase& c, std::ostream* os) {
  *os << c.name;
}

const ScenarioCase kScenarioCases[] = {
    {"basic", {{"deviceMalloc", 8}, {"deviceFree", 8}}},
    {"async", {{"deviceMalloc", 5}, {"deviceFree", 5}}},
    {"pinned", {{"pinnedMalloc", 4}, {"pinnedFree", 4}}},
    {"vmm", {{"deviceMalloc", 2}, {"deviceFree", 2}}},
    {"launch", {{"deviceMalloc", 1}, {"deviceFree", 1}, {"kernelLaunch", 13}}},
    {"oom", {{"deviceMalloc", 4}, {"deviceFree", 4}, {"deviceOom", 4}}},
    {"pool", {{"deviceMalloc", 5}, {"deviceFree", 5}}},
    {"caching",
     {{"deviceMalloc", 7},
      {"deviceFree", 7},
      {"deviceOom", 1},
      {"poolMalloc", 18},
      {"poolFree", 18},
      {"poolFreeCompleted", 1},
      {"poolState", 14},
      {"oomTopAlloc", 10}}},
    {"two_devices", {{"deviceMalloc", 3}, {"deviceFree", 3}, {"kernelLaunch", 1}}},
    {"fork", {{"deviceMalloc", 2}, {"deviceFree", 2}}},
    {"threads", {{"deviceMalloc", 12}, {"deviceFree", 12}, {"kernelLaunch", 8}}},
    {"caching_threads",
     {{"deviceMalloc", 1},
      {"deviceFree", 1},
      {"poolMalloc", 100},
      {"poolFree", 100},
      {"poolFreeCompleted", 4},
      {"poolState", 2}}},
    {"caching_two_devices",
     {{"deviceMalloc", 2},
      {"deviceFree", 2},
      {"poolMalloc", 3},
      {"poolFree", 3},
      {"poolFreeCompleted", 1},
      {"poolState", 4}}},
};

// Every block is freed once, after its allocation, by its address, with its device (and a
// mapping with its size); addresses are 256-byte aligned; allocations and frees name an API.
void check_pairs(const std::vector<Line>& lines) {
  std::map<std::pair<std::string, std::string>, const Line*> live;  // (pid, addr)
  for (const Line& line : lines) {
    if (line.prefix != "expect") continue;
    bool alloc = line.what == "deviceMalloc" || line.what == "pinnedMalloc";
    bool free = line.what == "deviceFree" || line.what == "pinnedFree";
    if (!alloc && !free) continue;
    EXPECT_TRUE(line.keys.count("api") && line.keys.count("device")) << line.what;
    const std::string& addr = line.keys.at("addr");
    EXPECT_EQ(std::stoull(addr, nullptr, 16) % 256, 0u) << addr;
    auto key = std::make_pair(line.keys.at("pid"), addr);
    if (alloc) {
      EXPECT_TRUE(live.emplace(key, &line).second) << addr << " allocated twice";
      continue;
    }
    auto it = live.find(key);
    if (it == live.end()) {
      ADD_FAILURE() << addr << " freed but not allocated";
      continue;
    }
    EXPECT_EQ(it->second->keys.at("device"), line.keys.at("device")) << addr;
    if (line.keys.count("size_bytes")) {
      EXPECT_EQ(it->second->keys.at("size_bytes"), line.keys.at("size_bytes")) << addr;
    }
    live.erase(it);
  }
  for (const auto& [key, line] : live) ADD_FAILURE() << key.second << " never freed";
}

// A reporting pool's lines (caching scenarios) against themselves: each block is handed out
// while not in use, its free requested once with its size and stream, completed later only
// when it said pending=1, and handed out again only after that; every poolState holds the
// bytes of the blocks allocated then and of the device's blocks (its segments: nothing else
// is live meanwhile); the oomTopAlloc lines are the 10 largest blocks allocated at the
// deviceOom before them. Returns how many pool lines it checked.
size_t check_pool(const std::vector<Line>& lines) {
  using Key = std::tuple<std::string, std::string, std::string>;  // pid, device, addr
  struct Block {
    uint64_t size;
    std::string stream;
  };
  std::map<Key, Block> allocated, pending;
  std::map<Key, uint64_t> segments;
  std::vector<std::pair<uint64_t, std::string>> top_at_oom;  // (size, addr), largest first
  size_t checked = 0, rank = 0;
  for (const Line& line : lines) {
    if (line.prefix != "expect") continue;
    auto get = [&](const char* k) {
      auto it = line.keys.find(k);
      return it == line.keys.end() ? std::string() : it->second;
    };
    const std::string pid = get("pid"), device = get("device");
    const Key key{pid, device, get("addr")};
    const uint64_t size = get("size_bytes").empty() ? 0 : std::stoull(get("size_bytes"));
    if (line.what == "deviceMalloc") {
      segments[key] = size;
    } else if (line.what == "deviceFree") {
      segments.erase(key);
    } else if (line.what == "deviceOom") {
      top_at_oom.clear();
      for (const auto& [k, b] : allocated) {
        if (std::get<0>(k) == pid && std::get<1>(k) == device)
          top_at_oom.emplace_back(b.size, std::get<2>(k));
      }
      std::sort(top_at_oom.rbegin(), top_at_oom.rend());
      if (top_at_oom.size() > 10) top_at_oom.resize(10);
      rank = 0;
    }
    if (line.what.rfind("pool", 0) != 0 && line.what != "oomTopAlloc") continue;
    ++checked;
    EXPECT_FALSE(device.empty()) << line.what;
    if (line.what == "poolMalloc") {
      EXPECT_FALSE(allocated.count(key) || pending.count(key)) << get("addr") << " in use";
      EXPECT_EQ(std::stoull(get("addr"), nullptr, 16) % 512, 0u) << get("addr");
      allocated[key] = {size, get("stream")};
    } else if (line.what == "poolFree") {
      auto it = allocated.find(key);
      if (it == allocated.end()) {
        ADD_FAILURE() << get("addr") << " freed but not allocated";
        continue;
      }
      EXPECT_EQ(it->second.size, size) << get("addr");
      EXPECT_EQ(it->second.stream, get("stream")) << get("addr");
      EXPECT_TRUE(get("pending") == "0" || get("pending") == "1") << get("pending");
      if (get("pending") == "1") pending[key] = it->second;
      allocated.erase(it);
    } else if (line.what == "poolFreeCompleted") {
      auto it = pending.find(key);
      if (it == pending.end()) {
        ADD_FAILURE() << get("addr") << " completed but not pending";
        continue;
      }
      EXPECT_EQ(it->second.size, size) << get("addr");
      EXPECT_EQ(it->second.stream, get("stream")) << get("addr");
      pending.erase(it);
    } else if (line.what == "poolState") {
      auto on_device = [&](const Key& k) {
        return std::get<0>(k) == pid && std::get<1>(k) == device;
      };
      uint64_t allocated_bytes = 0, reserved_bytes = 0;
      for (const auto& [k, b] : allocated) allocated_bytes += on_device(k) ? b.size : 0;
      for (const auto& [k, bytes] : segments) reserved_bytes += on_device(k) ? bytes : 0;
      EXPECT_EQ(get("allocated_bytes"), std::to_string(allocated_bytes));
      EXPECT_EQ(get("reserved_bytes"), std::to_string(reserved_bytes));
    } else if (line.what == "oomTopAlloc") {
      ++rank;
      EXPECT_EQ(get("rank"), std::to_string(rank));
      if (rank > top_at_oom.size()) {
        ADD_FAILURE() << "oomTopAlloc rank " << rank << " past the blocks allocated";
        continue;
      }
      EXPECT_EQ(size, top_at_oom[rank - 1].first) << "rank " << rank;
      EXPECT_EQ(get("addr"), top_at_oom[rank - 1].second) << "rank " << rank;
    }
  }
  EXPECT_EQ(rank, top_at_oom.size()) << "oomTopAlloc lines";
  for (const auto& [key, b] : allocated) ADD_FAILURE() << std::get<2>(key) << " never freed";
  for (const auto& [key, b] : pending) ADD_FAILURE() << std::get<2>(key) << " never completed";
  return checked;
}

class CudaPoolScenario : public ::testing::TestWithParam<ScenarioCase> {};

TEST_P(CudaPoolScenario, ExitsZeroAndPrintsWhatItDid) {
  const ScenarioCase& c = GetParam();
  ProcessResult r = run_program({c.name});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  std::vector<Line> lines = parse(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.front().what, "scenario");
  EXPECT_EQ(lines.front().keys["name"], c.name);
  EXPECT_EQ(lines.back().what, "scenario_end");
  std::map<std::string, int> events;
  for (const Line& line : lines)
    if (line.prefix == "expect") events[line.what]++;
  EXPECT_EQ(events, c.events) << r.out;
  check_pairs(lines);
  check_pool(lines);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, CudaPoolScenario, ::testing::ValuesIn(kScenarioCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CudaPoolProgram, NamesKernelsAndDevicesAsItCalledThem) {
  ProcessResult r = run_program({"launch", "two_devices", "fork"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  std::multiset<std::string> launches;
  std::set<std::string> pids;
  for (const Line& line : parse(r.out)) {
    pids.insert(line.keys.at("pid"));
    if (line.what == "kernelLaunch")
      launches.insert(line.keys.at("api") + " " + line.keys.at("name") + " " +
                      line.keys.at("device"));
  }
  EXPECT_EQ(launches.count("cudaLaunchKernel fake_add_kernel 0"), 2u);
  EXPECT_EQ(launches.count("__cudaLaunchKernel fake_add_kernel 0"), 2u);
  EXPECT_EQ(launches.count("__cudaLaunchKernel_ptsz fake_add_kernel 0"), 2u);
  EXPECT_EQ(launches.count("cudaLaunchKernelExC fake_scale_kernel 0"), 2u);
  EXPECT_EQ(launches.count("cuLaunchKernel _Z13triton_kernelPf 0"), 4u);
  EXPECT_EQ(launches.count("cuLaunchKernelEx _Z13triton_kernelPf 0"), 1u);
  EXPECT_EQ(launches.count("cudaLaunchKernel fake_add_kernel 1"), 1u);
  EXPECT_EQ(pids.size(), 2u);  // the fork child's lines carry its pid
}

TEST(CudaPoolProgram, AllRunsEveryScenarioAndRefusesUnknownOnes) {
  ProcessResult r = run_program({"all"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  std::vector<std::string> ran;
  for (const Line& line : parse(r.out))
    if (line.what == "scenario") ran.push_back(line.keys.at("name"));
  EXPECT_EQ(ran.size(), std::size(kScenarioCases));
  check_pairs(parse(r.out));
  EXPECT_GT(check_pool(parse(r.out)), 0u);

  r = run_program({"all"}, {"MEMTAP_FAKE_CUDA_DEVICES=1"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  EXPECT_NE(r.out.find("did skip scenario=two_devices devices=1"), std::string::npos);
  EXPECT_NE(r.out.find("did skip scenario=caching_two_devices devices=1"), std::string::npos);
  r = run_program({"two_devices"}, {"MEMTAP_FAKE_CUDA_DEVICES=1"});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << describe(r);
  EXPECT_NE(r.err.find("two_devices needs two devices"), std::string::npos) << r.err;
  r = run_program({"basic"}, {"MEMTAP_FAKE_CUDA_DEVICES=0"});  // cuInit: CUDA_ERROR_NO_DEVICE
  EXPECT_TRUE(r.exited && r.exit_code == 1) << describe(r);
  EXPECT_NE(r.err.find("cudaErrorNoDevice"), std::string::npos) << r.err;
  r = run_program({"basic", "nonsense"});
  EXPECT_TRUE(r.exited && r.exit_code == 2) << describe(r);
  EXPECT_EQ(r.out, "");
}

// The runtime reaches the driver as the real one does, which a preloaded shim logging dlsym
// and cuGetProcAddress (as memtap's agent wraps them) shows.
TEST(CudaPoolProgram, TheRuntimeLooksTheDriverUpThroughDlsymAndCuGetProcAddress) {
  ProcessResult r = run_program({"basic", "launch"}, {"MEMTAP_FAKE_CUDA_DEVICES=2",
                                                      std::string("LD_PRELOAD=") + DL_LOG_SHIM});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  std::vector<std::string> log;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("dl-log: ", 0) == 0) log.push_back(line.substr(8));
  ASSERT_FALSE(log.empty()) << r.err;
  // The runtime's only dlsym, and the first lookup it makes through it.
  EXPECT_EQ(log[0], "dlsym cuGetProcAddress_v2 in libcuda.so.1 by libcudart.so.13");
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[1], "gpa cuGetProcAddress 12000 0");
  EXPECT_EQ(std::count_if(log.begin(), log.end(),
                          [](const std::string& l) {
                            return l.rfind("dlsym", 0) == 0 && l.find("by libcudart") != l.npos;
                          }),
            1);
  auto logged = [&](const std::string& line) {
    return std::find(log.begin(), log.end(), line) != log.end();
  };
  // What the runtime asks for, as measured on an H100, and PyTorch's entry points.
  for (const char* line :
       {"gpa cuInit 2000 0", "gpa cuMemAlloc 3020 0", "gpa cuMemFree 3020 0",
        "gpa cuMemAllocPitch 3020 0", "gpa cuMemAllocManaged 6000 0", "gpa cuMemHostAlloc 2020 0",
        "gpa cuMemAllocHost 3020 0", "gpa cuMemFreeHost 2000 0", "gpa cuMemAllocAsync 11020 0",
        "gpa cuMemFreeAsync 11020 0", "gpa cuMemAllocFromPoolAsync 11020 0",
        "gpa cuLaunchKernel 4000 0", "gpa cuLaunchKernel 7000 2", "gpa cuLaunchKernelEx 11060 0",
        "gpa cuMemGetInfo 3020 0", "gpa cuCtxGetDevice 2000 0",
        "gpa cuDevicePrimaryCtxRetain 7000 0", "gpa cuCtxSetCurrent 4000 0",
        "gpa cuStreamCreate 2000 0", "gpa cuFuncGetName 12030 0", "gpa cuMemCreate 12000 0",
        "gpa cuMemMap 12000 0", "gpa cuMemAlloc 12000 0",
        // Triton's way, from the program itself.
        "dlsym cuMemAlloc_v2 in libcuda.so.1 by memtap_test_cuda_pool",
        "dlsym cuLaunchKernel in libcuda.so.1 by memtap_test_cuda_pool"})
    EXPECT_TRUE(logged(line)) << line << "\n" << r.err;
}

}  // namespace
