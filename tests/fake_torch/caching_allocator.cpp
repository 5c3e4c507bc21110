// Stand-in for PyTorch's libc10_cuda.so (tests/fake_torch/): a small CUDA caching allocator
// over the stand-in CUDA runtime (tests/fake_cuda/), with PyTorch's trace trackers, so that
// memtap's pool tracker can be compiled, attached and fed on a machine without a GPU.
//
// It behaves as PyTorch's native allocator does where the tracker can see it:
//   - blocks are carved from segments it gets with cudaMalloc: 2 MiB segments for requests
//     of up to 1 MiB, a segment of the request rounded up to 2 MiB for larger ones; a
//     segment serves one stream; block sizes are rounded up to 512 bytes;
//   - every tracker gets, synchronously, on the allocating or freeing thread and under the
//     device's lock: SEGMENT_ALLOC before the ALLOC of the block that needed the segment,
//     ALLOC and FREE_REQUESTED with the size requested, FREE_COMPLETED at once unless the
//     block was used on another stream (then at the next synchronize()), SEGMENT_FREE when
//     empty_cache() gives an unused segment back;
//   - when CUDA refuses a segment, it gives the device's unused segments back (and unmaps the
//     free pages of its expandable ones) and asks once more before it fails, as PyTorch's
//     release_cached_blocks() and retry do: an out-of-memory error is two refused calls;
//   - with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync there is no pool: each block is a
//     cudaMallocAsync, and attaching a tracker throws, as PyTorch's async backend does;
//   - with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True a segment is a reserved address
//     range (1 1/8 of the device's memory) per stream and pool, mapped page by page (2 MiB
//     pages for small blocks, 20 MiB for large) through driver entry points obtained with
//     cudaGetDriverEntryPointByVersion: every page's cuMemCreate first, then each cuMemMap
//     and one cuMemSetAccess; a cuMemCreate that runs out releases that call's pages and the
//     request fails. Trackers get one SEGMENT_MAP per range mapped, and SEGMENT_UNMAP when
//     empty_cache() unmaps the free pages at the segment's end (PyTorch unmaps free pages
//     anywhere in it; the stand-in only trims the end, which is what its tests need).
//
// What memtap must record of each call is printed on stdout, in the words of
// tests/programs/cuda_pool_prog.c ("expect EVENT key=value ... pid= tid="): the segments'
// deviceMalloc/deviceFree always (memtap's CUDA hooks see them), the pool lines (poolMalloc,
// poolFree, poolFreeCompleted, poolState) while a tracker is attached.
//
// The C functions at the end are what the stand-in `torch` package (torch/cuda.py) calls.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/fake_torch/expect_line.h"

namespace {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kBlockRound = 512;
constexpr size_t kSmallSize = kMiB;
constexpr size_t kSmallSegment = 2 * kMiB;
constexpr size_t kLargePage = 20 * kMiB;  // an expandable segment's page in the large pool
constexpr int kMaxDevices = 8;

using c10::cuda::CUDACachingAllocator::TraceEntry;
using standin::print_line;

struct Block {
  uint64_t addr = 0;
  size_t size = 0;       // rounded
  size_t requested = 0;  // what the caller asked for; 0 while free
  bool allocated = false;
  bool pending = false;                 // freed, waiting for the streams it was used on
  std::vector<uint64_t> other_streams;  // record_stream()
};

struct Segment {
  uint64_t base = 0;
  size_t size = 0;  // an expandable segment's: what is mapped, from base on
  uint64_t stream = 0;
  bool small = false;
  std::map<uint64_t, Block> blocks;  // by address, covering the segment
  // Expandable segments only: the address range reserved, its page size, and the mapped
  // pages' physical handles in address order.
  size_t reserved = 0;
  size_t page = 0;
  std::vector<CUmemGenericAllocationHandle> handles;
  bool expandable() const { return reserved != 0; }
};

struct DeviceState {
  std::recursive_mutex mutex;
  std::vector<Segment> segments;
  size_t requested = 0, requested_peak = 0;
  size_t reserved = 0, reserved_peak = 0;
  size_t allocated = 0, allocated_peak = 0;  // rounded block sizes, as PyTorch counts them

  void note_peaks() {
    requested_peak = std::max(requested_peak, requested);
    allocated_peak = std::max(allocated_peak, allocated);
    reserved_peak = std::max(reserved_peak, reserved);
  }
};

int current_device() {
  int device = 0;
  cudaGetDevice(&device);
  return device;
}

// `device` current for the scope, as PyTorch's allocator calls CUDA under a device guard.
struct DeviceGuard {
  explicit DeviceGuard(int device) : previous(current_device()) { cudaSetDevice(device); }
  ~DeviceGuard() { cudaSetDevice(previous); }
  const int previous;
};

bool async_backend() {
  const char* conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
  return conf && strstr(conf, "backend:cudaMallocAsync");
}

// PyTorch 2.1 brought expandable segments.
bool expandable_segments() {
  const char* conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
  return MEMTAP_STANDIN_TORCH >= 201 && conf && strstr(conf, "expandable_segments:True");
}

// The driver's virtual-memory functions, as PyTorch's c10::cuda::DriverAPI gets them.
struct DriverApi {
  PFN_cuMemAddressReserve_v10020 address_reserve = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
};

template <typename Fn>
void entry_point(const char* symbol, Fn* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status) !=
          cudaSuccess ||
      status != cudaDriverEntryPointSuccess || !fn) {
    fprintf(stderr, "stand-in torch: no driver entry point %s\n", symbol);
    abort();
  }
  *out = reinterpret_cast<Fn>(fn);
}

const DriverApi& driver_api() {
  static const DriverApi api = [] {
    DriverApi a;
    entry_point("cuMemAddressReserve", &a.address_reserve);
    entry_point("cuMemCreate", &a.create);
    entry_point("cuMemRelease", &a.release);
    entry_point("cuMemMap", &a.map);
    entry_point("cuMemUnmap", &a.unmap);
    entry_point("cuMemSetAccess", &a.set_access);
    return a;
  }();
  return api;
}

CUmemAllocationProp device_memory(int device) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// Every device's lock, for what spans them all (a tracker's attaching, a block found by
// address alone).
struct AllDevicesLock {
  explicit AllDevicesLock(DeviceState (&devices)[kMaxDevices]) : devices(devices) {
    for (DeviceState& d : devices) d.mutex.lock();
  }
  ~AllDevicesLock() {
    for (DeviceState& d : devices) d.mutex.unlock();
  }
  DeviceState (&devices)[kMaxDevices];
};

class StandInAllocator final : public c10::cuda::CUDACachingAllocator::CUDAAllocator {
 public:
#if MEMTAP_STANDIN_TORCH >= 201
  void attachAllocatorTraceTracker(
      c10::cuda::CUDACachingAllocator::AllocatorTraceTracker tracker) override {
    if (async_backend()) {
      // PyTorch's TORCH_CHECK message, then the lines c10::Error adds.
      throw std::runtime_error(
          "cudaMallocAsync does not yet support attachAllocatorTraceTracker. If you need it, "
          "please file an issue describing your use case.\nException raised from "
          "attachAllocatorTraceTracker at CUDAMallocAsyncAllocator.cpp (most recent call "
          "first):\nframe #0: <stand-in>");
    }
    const AllDevicesLock lock(devices_);
    trackers_.push_back(std::move(tracker));
  }
#endif
  std::string name() override {
    return async_backend() ? "cudaMallocAsync" : "native";
  }

  uint64_t malloc(int device, size_t size, uint64_t stream);
  bool free(uint64_t addr);
  bool record_stream(uint64_t addr, uint64_t stream);
  void synchronize();
  void empty_cache();
  void release_cached(int device);  // this device's unused segments back to CUDA
  void stats(int device, uint64_t out[6]);
  std::string snapshot();

 private:
  bool tracking() const {
#if MEMTAP_STANDIN_TORCH >= 201
    return !trackers_.empty();
#else
    return false;
#endif
  }
  void trace(TraceEntry::Action action, int device, uint64_t addr, size_t size, uint64_t stream);
  void note_state(int device, const DeviceState& d) {
    if (tracking()) {
      print_line("expect poolState device=%d allocated_bytes=%zu reserved_bytes=%zu", device,
                 d.requested, d.reserved);
    }
  }
  Block* find_block(uint64_t addr, Segment** segment, int* device);
  bool new_segment(int device, uint64_t stream, bool small, size_t rounded, Segment** segment,
                   Block** block);
  bool grow_expandable(int device, uint64_t stream, bool small, size_t rounded, Segment** segment,
                       Block** block);
  void trim_expandable(int device, Segment& s);
  void complete_free(Segment& s, Block& b);

  DeviceState devices_[kMaxDevices];
#if MEMTAP_STANDIN_TORCH >= 201
  std::vector<c10::cuda::CUDACachingAllocator::AllocatorTraceTracker> trackers_;
#endif
  struct AsyncBlock {
    int device;
    size_t size, requested;
  };
  std::map<uint64_t, AsyncBlock> async_blocks_;  // the async backend's, by address
};

StandInAllocator g_standin;  // what `allocator` points to, as PyTorch's is a static object

void StandInAllocator::trace(TraceEntry::Action action, int device, uint64_t addr, size_t size,
                             uint64_t stream) {
#if MEMTAP_STANDIN_TORCH >= 201
  const auto s = reinterpret_cast<cudaStream_t>(stream);
#if MEMTAP_STANDIN_TORCH >= 209
  const TraceEntry e(action, c10::DeviceIndex(device), size_t(addr), size, s, {0, 0}, 0);
#else
  const TraceEntry e(action, device, int64_t(addr), size, s, 0);
#endif
  for (const auto& tracker : trackers_) tracker(e);
#else
  (void)action, (void)device, (void)addr, (void)size, (void)stream;
#endif
}

// A segment for a block of `rounded` bytes: a cudaMalloc, or pages mapped at the end of an
// expandable segment. False when CUDA refuses.
bool StandInAllocator::new_segment(int device, uint64_t stream, bool small, size_t rounded,
                                   Segment** segment, Block** block) {
  if (expandable_segments()) return grow_expandable(device, stream, small, rounded, segment, block);
  DeviceState& d = devices_[device];
  const size_t segment_size =
      small ? kSmallSegment : (rounded + kSmallSegment - 1) / kSmallSegment * kSmallSegment;
  void* p = nullptr;
  if (cudaMalloc(&p, segment_size) != cudaSuccess) {
    print_line("expect deviceOom api=cudaMalloc device=%d size_bytes=%zu", device, segment_size);
    return false;
  }
  print_line("expect deviceMalloc api=cudaMalloc device=%d size_bytes=%zu addr=0x%llx", device,
             segment_size, static_cast<unsigned long long>(uint64_t(p)));
  Segment s;
  s.base = uint64_t(p);
  s.size = segment_size;
  s.stream = stream;
  s.small = small;
  s.blocks[s.base] = Block{s.base, segment_size, 0, false, false, {}};
  d.segments.push_back(std::move(s));
  d.reserved += segment_size;
  *segment = &d.segments.back();
  *block = &(*segment)->blocks.begin()->second;
  trace(TraceEntry::SEGMENT_ALLOC, device, (*segment)->base, segment_size, stream);
  note_state(device, d);
  return true;
}

uint64_t StandInAllocator::malloc(int device, size_t size, uint64_t stream) {
  if (device < 0 || device >= kMaxDevices) return 0;
  DeviceState& d = devices_[device];
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  const DeviceGuard guard(device);
  const size_t rounded =
      size == 0 ? kBlockRound : (size + kBlockRound - 1) / kBlockRound * kBlockRound;
  if (async_backend()) {
    void* p = nullptr;
    if (cudaMallocAsync(&p, rounded, reinterpret_cast<cudaStream_t>(stream)) != cudaSuccess) {
      return 0;
    }
    async_blocks_[uint64_t(p)] = {device, rounded, size};
    d.requested += size;
    d.allocated += rounded;
    d.reserved += rounded;
    d.note_peaks();
    print_line(
        "expect deviceMalloc api=cudaMallocAsync device=%d size_bytes=%zu addr=0x%llx "
        "stream=0x%llx",
        device, rounded, static_cast<unsigned long long>(uint64_t(p)),
        static_cast<unsigned long long>(stream));
    return uint64_t(p);
  }
  const bool small = rounded <= kSmallSize;
  // Best fit among the free blocks of this device's segments of the same stream and kind.
  Segment* segment = nullptr;
  Block* block = nullptr;
  for (Segment& s : d.segments) {
    if (s.stream != stream || s.small != small) continue;
    for (auto& [addr, b] : s.blocks) {
      if (!b.allocated && !b.pending && b.size >= rounded && (!block || b.size < block->size)) {
        segment = &s;
        block = &b;
      }
    }
  }
  // Refused by CUDA, PyTorch's allocator gives the device's cached segments back and asks
  // again before it raises: a real out-of-memory error is two refused calls.
  if (!block && !new_segment(device, stream, small, rounded, &segment, &block)) {
    release_cached(device);
    if (!new_segment(device, stream, small, rounded, &segment, &block)) return 0;
  }
  if (block->size - rounded >= kBlockRound) {
    const uint64_t rest = block->addr + rounded;
    segment->blocks[rest] = Block{rest, block->size - rounded, 0, false, false, {}};
    block->size = rounded;
  }
  block->allocated = true;
  block->requested = size;
  d.requested += size;
  d.allocated += block->size;
  d.note_peaks();
  trace(TraceEntry::ALLOC, device, block->addr, size, stream);
  if (tracking()) {
    print_line("expect poolMalloc device=%d size_bytes=%zu addr=0x%llx stream=0x%llx", device, size,
               static_cast<unsigned long long>(block->addr),
               static_cast<unsigned long long>(stream));
  }
  return block->addr;
}

// The free block at the end of a segment, if its last block is one.
Block* free_tail(Segment& s) {
  if (s.blocks.empty()) return nullptr;
  Block& last = s.blocks.rbegin()->second;
  return last.allocated || last.pending ? nullptr : &last;
}

// What an expandable segment can still give at its end: its free tail and what is unmapped.
size_t room(Segment& s) {
  const Block* tail = free_tail(s);
  return (tail ? tail->size : 0) + s.reserved - s.size;
}

// Maps, at the end of this stream's and pool's expandable segment (a new one if none has
// room), the pages a block of `rounded` bytes needs beyond the segment's free tail, which
// then holds it. False when the device runs out.
bool StandInAllocator::grow_expandable(int device, uint64_t stream, bool small, size_t rounded,
                                       Segment** segment, Block** block) {
  DeviceState& d = devices_[device];
  const DriverApi& api = driver_api();
  Segment* s = nullptr;
  for (Segment& c : d.segments) {
    if (c.expandable() && c.stream == stream && c.small == small && room(c) >= rounded) {
      s = &c;
      break;
    }
  }
  if (!s) {
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    Segment fresh;
    fresh.stream = stream;
    fresh.small = small;
    fresh.page = small ? kSmallSegment : kLargePage;
    fresh.reserved = (total + total / 8 + fresh.page - 1) / fresh.page * fresh.page;
    CUdeviceptr base = 0;
    if (api.address_reserve(&base, fresh.reserved, 0, 0, 0) != CUDA_SUCCESS) return false;
    fresh.base = base;
    d.segments.push_back(std::move(fresh));
    s = &d.segments.back();
  }
  const Block* tail = free_tail(*s);
  const size_t missing = rounded - (tail ? tail->size : 0);
  const size_t size = std::min((missing + s->page - 1) / s->page * s->page, s->reserved - s->size);
  const CUmemAllocationProp prop = device_memory(device);
  std::vector<CUmemGenericAllocationHandle> created;
  for (size_t done = 0; done < size; done += s->page) {
    CUmemGenericAllocationHandle handle = 0;
    if (api.create(&handle, s->page, &prop, 0) != CUDA_SUCCESS) {
      print_line("expect deviceOom api=cuMemCreate device=%d size_bytes=%zu via=entry_point",
                 device, s->page);
      for (const CUmemGenericAllocationHandle h : created) api.release(h);
      return false;
    }
    created.push_back(handle);
  }
  const uint64_t at = s->base + s->size;
  for (size_t i = 0; i < created.size(); ++i) {
    const uint64_t page = at + i * s->page;
    api.map(page, s->page, 0, created[i], 0);
    print_line(
        "expect deviceMalloc api=cuMemMap device=%d size_bytes=%zu addr=0x%llx via=entry_point",
        device, s->page, static_cast<unsigned long long>(page));
  }
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  api.set_access(at, size, &access, 1);
  s->handles.insert(s->handles.end(), created.begin(), created.end());
  s->size += size;
  d.reserved += size;
  if (Block* t = free_tail(*s)) {
    t->size += size;
  } else {
    s->blocks[at] = Block{at, size, 0, false, false, {}};
  }
#if MEMTAP_STANDIN_TORCH >= 201
  trace(TraceEntry::SEGMENT_MAP, device, at, size, stream);
#endif
  note_state(device, d);
  Block* grown = free_tail(*s);
  if (grown->size < rounded) return false;  // the whole range mapped, still too small
  *segment = s;
  *block = grown;
  return true;
}

// Unmaps the whole pages of an expandable segment's free tail.
void StandInAllocator::trim_expandable(int device, Segment& s) {
  Block* tail = free_tail(s);
  if (!tail) return;
  const uint64_t from = s.base + (tail->addr - s.base + s.page - 1) / s.page * s.page;
  const size_t size = s.base + s.size - from;
  if (size == 0) return;
  const DriverApi& api = driver_api();
  const size_t first = (from - s.base) / s.page;
  for (size_t i = first; i < s.handles.size(); ++i) {
    const uint64_t page = s.base + i * s.page;
    print_line(
        "expect deviceFree api=cuMemUnmap device=%d addr=0x%llx size_bytes=%zu via=entry_point",
        device, static_cast<unsigned long long>(page), s.page);
    api.unmap(page, s.page);
    api.release(s.handles[i]);
  }
  s.handles.resize(first);
  s.size -= size;
  DeviceState& d = devices_[device];
  d.reserved -= size;
  if (from == tail->addr) {
    s.blocks.erase(from);
  } else {
    tail->size -= size;
  }
#if MEMTAP_STANDIN_TORCH >= 201
  trace(TraceEntry::SEGMENT_UNMAP, device, from, size, s.stream);
#endif
  note_state(device, d);
}

Block* StandInAllocator::find_block(uint64_t addr, Segment** segment, int* device) {
  for (int i = 0; i < kMaxDevices; ++i) {
    for (Segment& s : devices_[i].segments) {
      auto it = s.blocks.find(addr);
      if (it != s.blocks.end() && it->second.allocated) {
        *segment = &s;
        *device = i;
        return &it->second;
      }
    }
  }
  return nullptr;
}

// The block goes back to its segment, merged with free neighbours.
void StandInAllocator::complete_free(Segment& s, Block& b) {
  b.pending = false;
  b.requested = 0;
  b.other_streams.clear();
  auto it = s.blocks.find(b.addr);
  auto next = std::next(it);
  if (next != s.blocks.end() && !next->second.allocated && !next->second.pending) {
    it->second.size += next->second.size;
    s.blocks.erase(next);
  }
  if (it != s.blocks.begin()) {
    auto prev = std::prev(it);
    if (!prev->second.allocated && !prev->second.pending) {
      prev->second.size += it->second.size;
      s.blocks.erase(it);
    }
  }
}

bool StandInAllocator::free(uint64_t addr) {
  if (auto it = async_blocks_.find(addr); it != async_blocks_.end()) {
    const AsyncBlock block = it->second;
    DeviceState& d = devices_[block.device];
    std::lock_guard<std::recursive_mutex> lock(d.mutex);
    print_line("expect deviceFree api=cudaFreeAsync device=%d addr=0x%llx", block.device,
               static_cast<unsigned long long>(addr));
    cudaFreeAsync(reinterpret_cast<void*>(addr), nullptr);
    d.allocated -= block.size;
    d.reserved -= block.size;
    d.requested -= block.requested;
    async_blocks_.erase(it);
    return true;
  }
  Segment* s = nullptr;
  int device = -1;
  Block* b = nullptr;
  {
    const AllDevicesLock all(devices_);
    b = find_block(addr, &s, &device);
  }
  if (!b) return false;
  DeviceState& d = devices_[device];
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  // Used on another stream: taken back only when that stream is done (synchronize()).
  const bool pending = !b->other_streams.empty();
  b->allocated = false;
  d.requested -= b->requested;
  d.allocated -= b->size;
  trace(TraceEntry::FREE_REQUESTED, device, addr, b->requested, s->stream);
  if (!pending) trace(TraceEntry::FREE_COMPLETED, device, addr, b->requested, s->stream);
  if (tracking()) {
    print_line("expect poolFree device=%d addr=0x%llx size_bytes=%zu pending=%d stream=0x%llx",
               device, static_cast<unsigned long long>(addr), b->requested, int(pending),
               static_cast<unsigned long long>(s->stream));
  }
  if (pending) {
    b->pending = true;  // its requested size stays, for FREE_COMPLETED
  } else {
    complete_free(*s, *b);
  }
  return true;
}

bool StandInAllocator::record_stream(uint64_t addr, uint64_t stream) {
  if (async_blocks_.count(addr)) return true;  // the async backend's streams order its frees
  Segment* s = nullptr;
  int device = -1;
  const AllDevicesLock lock(devices_);
  Block* b = find_block(addr, &s, &device);
  if (b && stream != s->stream) b->other_streams.push_back(stream);
  return b != nullptr;
}

// The streams are done: every pending free completes.
void StandInAllocator::synchronize() {
  cudaDeviceSynchronize();
  for (int device = 0; device < kMaxDevices; ++device) {
    DeviceState& d = devices_[device];
    std::lock_guard<std::recursive_mutex> lock(d.mutex);
    for (Segment& s : d.segments) {
      std::vector<uint64_t> pending;
      for (auto& [addr, b] : s.blocks) {
        if (b.pending) pending.push_back(addr);
      }
      for (const uint64_t addr : pending) {
        auto it = s.blocks.find(addr);
        if (it == s.blocks.end()) continue;
        trace(TraceEntry::FREE_COMPLETED, device, addr, it->second.requested, s.stream);
        if (tracking()) {
          print_line("expect poolFreeCompleted device=%d addr=0x%llx size_bytes=%zu stream=0x%llx",
                     device, static_cast<unsigned long long>(addr), it->second.requested,
                     static_cast<unsigned long long>(s.stream));
        }
        complete_free(s, it->second);
      }
    }
  }
}

// Unused segments go back to CUDA.
void StandInAllocator::empty_cache() {
  for (int device = 0; device < kMaxDevices; ++device) release_cached(device);
}

void StandInAllocator::release_cached(int device) {
  DeviceState& d = devices_[device];
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  for (size_t i = 0; i < d.segments.size();) {
    Segment& s = d.segments[i];
    if (s.expandable()) {
      const DeviceGuard guard(device);
      trim_expandable(device, s);
      ++i;
      continue;
    }
    const Block& only = s.blocks.begin()->second;
    if (s.blocks.size() != 1 || only.allocated || only.pending) {
      ++i;
      continue;
    }
    print_line("expect deviceFree api=cudaFree device=%d addr=0x%llx", device,
               static_cast<unsigned long long>(s.base));
    {
      const DeviceGuard guard(device);
      cudaFree(reinterpret_cast<void*>(s.base));
    }
    d.reserved -= s.size;
    trace(TraceEntry::SEGMENT_FREE, device, s.base, s.size, s.stream);
    note_state(device, d);
    d.segments.erase(d.segments.begin() + long(i));
  }
}

// torch.cuda.memory_stats()' current and peak of requested, allocated and reserved bytes.
void StandInAllocator::stats(int device, uint64_t out[6]) {
  DeviceState& d = devices_[device];
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  out[0] = d.requested;
  out[1] = d.requested_peak;
  out[2] = d.allocated;
  out[3] = d.allocated_peak;
  out[4] = d.reserved;
  out[5] = d.reserved_peak;
}

// torch.cuda.memory_snapshot()'s segments, as JSON: blocks in address order with their size,
// requested size and state, and no address (PyTorch gives none: they follow each other).
std::string StandInAllocator::snapshot() {
  std::string out = "[";
  for (int device = 0; device < kMaxDevices; ++device) {
    DeviceState& d = devices_[device];
    std::lock_guard<std::recursive_mutex> lock(d.mutex);
    for (const Segment& s : d.segments) {
      if (s.blocks.empty()) continue;  // an expandable segment with nothing mapped
      if (out.size() > 1) out += ",";
      out += "{\"device\":" + std::to_string(device) + ",\"address\":" + std::to_string(s.base) +
             ",\"total_size\":" + std::to_string(s.size) +
             ",\"stream\":" + std::to_string(s.stream) + ",\"segment_type\":\"" +
             (s.small ? "small" : "large") +
             "\",\"is_expandable\":" + (s.expandable() ? "true" : "false") + ",\"blocks\":[";
      bool first = true;
      for (const auto& [addr, b] : s.blocks) {
        out += first ? "" : ",";
        first = false;
        const char* state = b.allocated ? "active_allocated"
                            : b.pending ? "active_pending_free"
                                        : "inactive";
        out += "{\"size\":" + std::to_string(b.size) +
               ",\"requested_size\":" + std::to_string(b.requested) + ",\"state\":\"" + state +
               "\"}";
      }
      out += "]}";
    }
  }
  return out + "]";
}

}  // namespace

namespace c10::cuda {

namespace CUDACachingAllocator {
C10_CUDA_API std::atomic<CUDAAllocator*> allocator{&g_standin};
}  // namespace CUDACachingAllocator

C10_CUDA_API DeviceIndex device_count() noexcept {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? DeviceIndex(n) : 0;
}

C10_CUDA_API DeviceIndex current_device() {
  return DeviceIndex(::current_device());
}

}  // namespace c10::cuda

// What the stand-in torch package calls (ctypes).
extern "C" {

C10_CUDA_API int standin_cuda_init() {
  return int(c10::cuda::device_count());
}
C10_CUDA_API uint64_t standin_malloc(int device, uint64_t size, uint64_t stream) {
  return g_standin.malloc(device, size, stream);
}
C10_CUDA_API int standin_free(uint64_t addr) {
  return g_standin.free(addr) ? 0 : -1;
}
C10_CUDA_API int standin_record_stream(uint64_t addr, uint64_t stream) {
  return g_standin.record_stream(addr, stream) ? 0 : -1;
}
C10_CUDA_API void standin_synchronize() {
  g_standin.synchronize();
}
C10_CUDA_API void standin_empty_cache() {
  g_standin.empty_cache();
}
C10_CUDA_API void standin_stats(int device, uint64_t* out) {
  g_standin.stats(device, out);
}
C10_CUDA_API uint64_t standin_stream_create(int device) {
  const DeviceGuard guard(device);
  cudaStream_t s = nullptr;
  cudaStreamCreate(&s);
  return uint64_t(s);
}
C10_CUDA_API int standin_set_device(int device) {
  return cudaSetDevice(device) == cudaSuccess ? 0 : -1;
}
C10_CUDA_API int standin_current_device() {
  return current_device();
}
// The snapshot's JSON into buf (NUL-terminated); its length, or the size needed when larger.
C10_CUDA_API size_t standin_snapshot(char* buf, size_t cap) {
  const std::string json = g_standin.snapshot();
  if (json.size() < cap) memcpy(buf, json.c_str(), json.size() + 1);
  return json.size();
}

}  // extern "C"
