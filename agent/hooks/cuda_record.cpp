// Device records and the helpers the CUDA hooks share; see cuda_record.h.
#include "agent/hooks/cuda_record.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "agent/agent_state.h"
#include "agent/event_buffer_writer.h"
#include "agent/event_clock.h"
#include "agent/hooks/elf_symbols.h"
#include "agent/stacks.h"
#include "agent/string_log.h"

namespace memtap {

__thread int tl_cuda_depth __attribute__((tls_model("initial-exec"))) = 0;

namespace {

using namespace cuda;

using CtxGetDeviceFn = CUresult (*)(CUdevice*);
using MemGetInfoFn = CUresult (*)(size_t*, size_t*);
using FuncGetNameFn = CUresult (*)(const char**, CUfunction);
using KernelGetNameFn = CUresult (*)(const char**, const void*);
using RuntimeFuncGetNameFn = cudaError_t (*)(const char**, const void*);

// The driver functions the hooks call for themselves, found once libcuda is loaded. Globals
// because every hook of every thread uses them; written before `ready` is published.
struct DriverQueries {
  std::atomic<bool> ready{false};
  CtxGetDeviceFn ctx_get_device = nullptr;
  MemGetInfoFn mem_get_info = nullptr;
  FuncGetNameFn func_get_name = nullptr;
  KernelGetNameFn kernel_get_name = nullptr;             // CUDA >= 12.3
  RuntimeFuncGetNameFn runtime_func_get_name = nullptr;  // the runtime's, when it is loaded
};
DriverQueries g_queries;

const DriverQueries& queries() {
  if (g_queries.ready.load(std::memory_order_acquire)) return g_queries;
  // dlopen allocates through the hooked malloc: the agent's own work, not the program's.
  ++tl_agent_busy;
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY)) {
    g_queries.ctx_get_device = reinterpret_cast<CtxGetDeviceFn>(dlsym(cuda, "cuCtxGetDevice"));
    g_queries.mem_get_info = reinterpret_cast<MemGetInfoFn>(dlsym(cuda, "cuMemGetInfo_v2"));
    g_queries.func_get_name = reinterpret_cast<FuncGetNameFn>(dlsym(cuda, "cuFuncGetName"));
    g_queries.kernel_get_name = reinterpret_cast<KernelGetNameFn>(dlsym(cuda, "cuKernelGetName"));
    void* runtime_name = dlsym(RTLD_DEFAULT, "cudaFuncGetName");
    if (!runtime_name) runtime_name = find_loaded_symbol("libcudart.so", "cudaFuncGetName");
    g_queries.runtime_func_get_name = reinterpret_cast<RuntimeFuncGetNameFn>(runtime_name);
    dlclose(cuda);  // RTLD_NOLOAD took a reference; the program's keeps it loaded
    // Until libcuda is loaded (a runtime hook's real call failed before loading it) every
    // call asks again.
    g_queries.ready.store(true, std::memory_order_release);
  }
  --tl_agent_busy;
  return g_queries;
}

// Devices whose capacity has been recorded (deviceInfo), one bit each. A global: the first
// allocation on a device may come from any thread, and the record is wanted once.
std::atomic<uint64_t> g_devices_described{0};

void describe_device_once(uint16_t device) {
  if (device >= 64) return;
  const uint64_t bit = uint64_t{1} << device;
  if (g_devices_described.load(std::memory_order_relaxed) & bit) return;
  if (g_devices_described.fetch_or(bit, std::memory_order_relaxed) & bit) return;
  const DriverQueries& q = queries();
  size_t free_bytes = 0, total_bytes = 0;
  if (!q.mem_get_info || q.mem_get_info(&free_bytes, &total_bytes) != CUDA_SUCCESS) return;
  record_device_event(&g_agent.registry, g_agent.lossless, EventKind::kDeviceInfo, device,
                      free_bytes, total_bytes, event_clock_now(), 0);
}

void note_stream(uint16_t device, CUstream stream, uint64_t ts) {
  record_device_event(&g_agent.registry, g_agent.lossless, EventKind::kDeviceStream, device,
                      reinterpret_cast<uint64_t>(stream), 0, ts, 0);
}

// Kernel names by function: a launch must neither lock nor ask the driver each time. A
// global table shared by every thread (launches come from many), open addressing; a full
// neighbourhood just means the name is looked up again.
struct NameSlot {
  std::atomic<uintptr_t> function{0};
  std::atomic<uint32_t> id_plus_one{0};  // 0: being filled
};
constexpr size_t kNameSlots = 4096;
constexpr size_t kNameProbes = 16;
NameSlot g_kernel_names[kNameSlots];

uint32_t intern_text(const char* text) {
  return text && *text ? string_log_intern(text, strlen(text)) : 0;
}

// A CUfunction, or a CUkernel cast to one (cuLibraryGetKernel's handles launch as
// functions): cuFuncGetName names only the first, cuKernelGetName the second.
uint32_t driver_kernel_name(uintptr_t function) {
  const DriverQueries& q = queries();
  const char* name = nullptr;
  if (q.func_get_name && q.func_get_name(&name, reinterpret_cast<CUfunction>(function)) == 0 &&
      name) {
    return intern_text(name);
  }
  if (q.kernel_get_name &&
      q.kernel_get_name(&name, reinterpret_cast<const void*>(function)) == CUDA_SUCCESS && name) {
    return intern_text(name);
  }
  return 0;
}

// A runtime launch names a host stub, or (CUDA 13's <<<>>>, through __cudaGetKernel) a
// cudaKernel_t; on an H100 only cudaFuncGetName and cuKernelGetName name the second, and
// cudaFuncGetName takes both.
uint32_t runtime_kernel_name(uintptr_t function) {
  const DriverQueries& q = queries();
  const void* f = reinterpret_cast<const void*>(function);
  const char* name = nullptr;
  if (q.runtime_func_get_name && q.runtime_func_get_name(&name, f) == cudaSuccess && name) {
    return intern_text(name);
  }
  if (q.kernel_get_name && q.kernel_get_name(&name, f) == CUDA_SUCCESS && name) {
    return intern_text(name);
  }
  // Neither (an older CUDA): the host stub's own symbol, if it is exported.
  const uintptr_t stub = function;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(stub), &info) && info.dli_sname &&
      info.dli_saddr == reinterpret_cast<void*>(stub)) {
    return intern_text(info.dli_sname);
  }
  return 0;
}

uint32_t kernel_name(uintptr_t key, uint32_t (*find)(uintptr_t)) {
  const size_t start = (key >> 4) * 0x9e3779b97f4a7c15ull >> 52;  // 12 bits: kNameSlots
  for (size_t i = 0; i < kNameProbes; ++i) {
    NameSlot& s = g_kernel_names[(start + i) % kNameSlots];
    uintptr_t k = s.function.load(std::memory_order_acquire);
    if (k == key) {
      const uint32_t id = s.id_plus_one.load(std::memory_order_acquire);
      if (id != 0) return id - 1;
      break;  // another thread is filling it
    }
    if (k == 0) {
      const uint32_t id = find(key);
      if (s.function.compare_exchange_strong(k, key, std::memory_order_acq_rel)) {
        s.id_plus_one.store(id + 1, std::memory_order_release);
      }
      return id;
    }
  }
  return find(key);
}

void note_launch(uintptr_t key, uint32_t (*find)(uintptr_t), CUstream stream) {
  // Interning and the driver's name query allocate nothing through the hooks, but the
  // dladdr fallback may: it is the agent's work.
  ++tl_agent_busy;
  const uint32_t name = kernel_name(key, find);
  --tl_agent_busy;
  record_device_event(&g_agent.registry, g_agent.lossless, EventKind::kKernelLaunch,
                      cuda_current_device(), reinterpret_cast<uint64_t>(stream), 0,
                      event_clock_now(), name);
}

}  // namespace

bool CudaCall::records() const {
  return outermost_ && hooks_record();
}

uint64_t cuda_clock() {
  return event_clock_now();
}

void cuda_after_alloc(const CudaCall& call, int result, EventKind kind, const char* api,
                      uint32_t* api_cache, uint64_t addr, uint64_t size, bool has_stream,
                      CUstream stream) {
  if (!call.records()) return;
  if (result == 0) {
    cuda_note_malloc(kind, cuda_api_id(api, api_cache), addr, size, has_stream, stream);
  } else if (is_oom(result)) {
    cuda_note_oom(cuda_api_id(api, api_cache), size, stream);
  }
}

void cuda_after_free(const CudaCall& call, int result, EventKind kind, uint64_t addr,
                     uint64_t ts_before, bool has_stream, CUstream stream) {
  if (call.records() && result == 0 && addr != 0) {
    cuda_note_free(kind, addr, ts_before, has_stream, stream);
  }
}

uint32_t cuda_api_id(const char* name, uint32_t* cache) {
  uint32_t id = __atomic_load_n(cache, __ATOMIC_RELAXED);
  if (id == 0) {
    id = intern_text(name);
    __atomic_store_n(cache, id, __ATOMIC_RELAXED);
  }
  return id;
}

uint16_t cuda_current_device() {
  const DriverQueries& q = queries();
  CUdevice device = 0;
  if (!q.ctx_get_device || q.ctx_get_device(&device) != CUDA_SUCCESS || device < 0) return 0;
  return static_cast<uint16_t>(device);
}

void cuda_note_malloc(EventKind kind, uint32_t api, uint64_t addr, uint64_t size, bool has_stream,
                      CUstream stream) {
  const uint16_t device = kind == EventKind::kDeviceMalloc ? cuda_current_device() : 0;
  if (__builtin_expect(size >= g_stack_min_size, 0)) record_call_stacks();
  const uint64_t ts = event_clock_now();
  if (has_stream) note_stream(device, stream, ts);
  record_device_event(&g_agent.registry, g_agent.lossless, kind, device, addr, size, ts, api);
  if (kind == EventKind::kDeviceMalloc) describe_device_once(device);
}

void cuda_note_free(EventKind kind, uint64_t addr, uint64_t ts, bool has_stream, CUstream stream) {
  const uint16_t device = kind == EventKind::kDeviceFree ? cuda_current_device() : 0;
  if (has_stream) note_stream(device, stream, ts);
  record_device_event(&g_agent.registry, g_agent.lossless, kind, device, addr, 0, ts, 0);
}

void cuda_note_oom(uint32_t api, uint64_t size, CUstream stream) {
  record_device_event(&g_agent.registry, g_agent.lossless, EventKind::kDeviceOom,
                      cuda_current_device(), reinterpret_cast<uint64_t>(stream), size,
                      event_clock_now(), api);
}

void cuda_note_launch_driver(CUfunction driver_function, CUstream stream) {
  note_launch(reinterpret_cast<uintptr_t>(driver_function), driver_kernel_name, stream);
}

void cuda_note_launch_runtime(const void* runtime_function, CUstream stream) {
  note_launch(reinterpret_cast<uintptr_t>(runtime_function), runtime_kernel_name, stream);
}

}  // namespace memtap
