// The stand-in driver's memory: device, managed, pinned and stream-ordered allocations, and
// the virtual memory API (reserve, create, map, set access, unmap, release, free).
//
// Every block is its own raw anonymous mapping (page-aligned, so at least as aligned as the
// 256 bytes CUDA promises), readable and writable from the host, and distinct across devices
// as under unified addressing. Device, managed and virtual-memory allocations count their
// exact size against the device's capacity (cuMemGetInfo: capacity minus that); pinned host
// memory does not. Stream-ordered allocations and frees happen at once, which is what stream
// order means for the work of one stream.
#include <cstring>

#include "tests/fake_cuda/driver_state.h"

using namespace fake_cuda;

namespace {

// ------------------------------------------------------------------------------ the blocks

enum class Kind : uint8_t { kDevice, kManaged, kPinned };

struct Block {
  uint64_t addr;  // 0: an empty slot
  size_t size;
  int device;
  Kind kind;
};

// Open addressing on the address, linear probing, at most three quarters full.
constexpr size_t kSlots = size_t(1) << 16;
constexpr size_t kMaxBlocks = kSlots / 4 * 3;
Block g_blocks[kSlots];
size_t g_block_count;

size_t home_slot(uint64_t addr) {
  return size_t((addr >> 12) * 0x9E3779B97F4A7C15ull >> 48);
}

size_t find_block(uint64_t addr) {
  for (size_t i = home_slot(addr);; i = (i + 1) % kSlots) {
    if (g_blocks[i].addr == addr) return i;
    if (g_blocks[i].addr == 0) return kSlots;
  }
}

void insert_block(const Block& block) {
  size_t i = home_slot(block.addr);
  while (g_blocks[i].addr != 0) i = (i + 1) % kSlots;
  g_blocks[i] = block;
  g_block_count++;
}

// Backward-shift deletion: later entries of the probe chain move up, so no tombstones.
void erase_block(size_t hole) {
  for (size_t j = (hole + 1) % kSlots; g_blocks[j].addr != 0; j = (j + 1) % kSlots) {
    size_t home = home_slot(g_blocks[j].addr);
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    g_blocks[hole] = g_blocks[j];
    hole = j;
  }
  g_blocks[hole] = Block{};
  g_block_count--;
}

bool counted(Kind kind) {
  return kind != Kind::kPinned;
}

CUresult allocate(size_t size, int device, Kind kind, uint64_t* addr) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (counted(kind) && size > g_capacity - g_used[device]) return CUDA_ERROR_OUT_OF_MEMORY;
  if (g_block_count >= kMaxBlocks || size > SIZE_MAX - kPage) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = raw_mmap(nullptr, round_up(size, kPage), PROT_READ | PROT_WRITE, MAP_NORESERVE);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *addr = reinterpret_cast<uintptr_t>(p);
  insert_block(Block{*addr, size, device, kind});
  if (counted(kind)) g_used[device] += size;
  return CUDA_SUCCESS;
}

// Frees a block of the device kinds (pinned: false) or a pinned one; anything else, and an
// address inside a block, is CUDA_ERROR_INVALID_VALUE.
CUresult deallocate(uint64_t addr, bool pinned) {
  size_t i = find_block(addr);
  if (i == kSlots || (g_blocks[i].kind == Kind::kPinned) != pinned) return CUDA_ERROR_INVALID_VALUE;
  Block b = g_blocks[i];
  erase_block(i);
  raw_munmap(reinterpret_cast<void*>(b.addr), round_up(b.size, kPage));
  if (counted(b.kind)) g_used[b.device] -= b.size;
  return CUDA_SUCCESS;
}

CUresult allocate_async(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, bool from_pool,
                        CUstream hStream) {
  Lock lock;
  int device = 0;
  if (CUresult r = stream_device(hStream, &device)) return r;
  if (from_pool) {
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    device = p->device;
  }
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize == 0) {  // as on an H100: success, no memory
    *dptr = 0;
    return CUDA_SUCCESS;
  }
  uint64_t addr = 0;
  if (CUresult r = allocate(bytesize, device, Kind::kDevice, &addr)) return r;
  *dptr = addr;
  return CUDA_SUCCESS;
}

CUresult free_async(CUdeviceptr dptr, CUstream hStream) {
  Lock lock;
  int device = 0;
  if (CUresult r = stream_device(hStream, &device)) return r;
  return dptr == 0 ? CUDA_SUCCESS : deallocate(dptr, false);
}

// Pinned host memory; 0 bytes is success and no memory, as on an H100.
CUresult host_alloc(void** pp, size_t bytesize, unsigned int Flags) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  constexpr unsigned kKnownFlags =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (!pp || (Flags & ~kKnownFlags)) return CUDA_ERROR_INVALID_VALUE;
  uint64_t addr = 0;
  if (bytesize != 0) {
    if (CUresult r = allocate(bytesize, device, Kind::kPinned, &addr)) return r;
  }
  *pp = reinterpret_cast<void*>(addr);
  return CUDA_SUCCESS;
}

// The CUDA 2.x ABIs with 32-bit sizes and addresses, which a lookup below version 3020
// returns. Device memory here lies above 4 GiB, so they cannot work.
CUresult legacy_abi() {
  Lock lock;
  CUresult r = initialized();
  return r != CUDA_SUCCESS ? r : CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t addr = 0;
  if (CUresult r = allocate(bytesize, device, Kind::kDevice, &addr)) return r;
  *dptr = addr;
  return CUDA_SUCCESS;
}

// Rows of WidthInBytes padded to 512 bytes, as on an H100.
CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
      (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
    return CUDA_ERROR_INVALID_VALUE;
  size_t pitch = round_up(WidthInBytes, 512);
  if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t addr = 0;
  if (CUresult r = allocate(pitch * Height, device, Kind::kDevice, &addr)) return r;
  *dptr = addr;
  *pPitch = pitch;
  return CUDA_SUCCESS;
}

// Freeing 0 succeeds, as on an H100.
CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  return dptr == 0 ? CUDA_SUCCESS : deallocate(dptr, false);
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  *free = g_capacity - g_used[device];
  *total = g_capacity;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t addr = 0;
  if (CUresult r = allocate(bytesize, device, Kind::kManaged, &addr)) return r;
  *dptr = addr;
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return host_alloc(pp, bytesize, Flags);
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return host_alloc(pp, bytesize, 0);
}

// Freeing NULL succeeds, as on an H100.
CUresult cuMemFreeHost(void* p) {
  Lock lock;
  int device = 0;
  if (CUresult r = current_device(&device)) return r;
  return p ? deallocate(reinterpret_cast<uintptr_t>(p), true) : CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr_v1*, unsigned int) {
  return legacy_abi();
}
CUresult cuMemAllocPitch(CUdeviceptr_v1*, unsigned int*, unsigned int, unsigned int, unsigned int) {
  return legacy_abi();
}
CUresult cuMemFree(CUdeviceptr_v1) {
  return legacy_abi();
}
CUresult cuMemGetInfo(unsigned int*, unsigned int*) {
  return legacy_abi();
}
CUresult cuMemAllocHost(void** pp, unsigned int bytesize) {
  return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return allocate_async(dptr, bytesize, nullptr, false, hStream);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return allocate_async(dptr, bytesize, nullptr, false, hStream);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  return allocate_async(dptr, bytesize, pool, true, hStream);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  return allocate_async(dptr, bytesize, pool, true, hStream);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}

}  // extern "C"

// --------------------------------------------------------------------------- virtual memory
//
// A reservation is a PROT_NONE range. cuMemCreate makes a physical handle (its size counts
// against the device's capacity from then on, whether mapped or not); cuMemMap places it in
// a reservation, still inaccessible, and cuMemSetAccess makes the mapped range readable and
// writable. cuMemUnmap turns the range back into fresh PROT_NONE pages (the contents are
// lost: a real handle keeps them), and a handle's memory is given back when it has been
// released and is mapped nowhere. What an H100 was seen to refuse, the stand-in refuses with
// CUDA_ERROR_INVALID_VALUE: a size that is not a multiple of the 2 MiB granularity, a mapping
// outside a reservation or over another, releasing twice, access to an unmapped range,
// freeing a reservation that still has mappings.

namespace {

struct alignas(16) Physical {
  bool live;      // its memory is held (created, and mapped or not yet released)
  bool released;  // cuMemRelease was called
  int device;
  int maps;
  size_t size;
};
struct Reservation {
  bool live;
  uint64_t addr;
  size_t size;
};
struct Mapping {
  bool live;
  uint64_t addr;
  size_t size;
  Physical* physical;
};

Physical g_physical[4096];
Reservation g_reservations[256];
Mapping g_mappings[4096];

// What is wrong with an allocation's properties: INVALID_VALUE, or an H100's INVALID_DEVICE
// for a device that does not exist.
CUresult check_prop(const CUmemAllocationProp* prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  return valid_device(prop->location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

Physical* find_physical(CUmemGenericAllocationHandle handle) {
  return find_handle(g_physical, reinterpret_cast<const void*>(uintptr_t(handle)));
}

void give_back_if_unused(Physical* p) {
  if (!p->released || p->maps > 0) return;
  g_used[p->device] -= p->size;
  p->live = false;
}

const Reservation* reservation_containing(uint64_t addr, size_t size) {
  for (const Reservation& r : g_reservations)
    if (r.live && r.addr <= addr && addr + size <= r.addr + r.size) return &r;
  return nullptr;
}

bool overlaps(const Mapping& m, uint64_t addr, size_t size) {
  return m.live && m.addr < addr + size && addr < m.addr + m.size;
}

bool granular(uint64_t addr, size_t size) {
  return size != 0 && addr % kGranularity == 0 && size % kGranularity == 0;
}

template <typename T, size_t N>
T* free_slot(T (&array)[N]) {
  for (T& t : array)
    if (!t.live) return &t;
  return nullptr;
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (CUresult r = check_prop(prop)) return r;
  if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                       option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (CUresult r = check_prop(prop)) return r;
  if (!handle || flags != 0 || !granular(0, size)) return CUDA_ERROR_INVALID_VALUE;
  int device = prop->location.id;
  if (size > g_capacity - g_used[device]) return CUDA_ERROR_OUT_OF_MEMORY;
  Physical* p = free_slot(g_physical);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = Physical{true, false, device, 0, size};
  g_used[device] += size;
  *handle = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  Physical* p = find_physical(handle);
  if (!p || p->released) return CUDA_ERROR_INVALID_VALUE;
  p->released = true;
  give_back_if_unused(p);
  return CUDA_SUCCESS;
}

// 2 MiB-aligned (or `alignment`, if larger); the address hint is ignored, as a hint may be.
CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr,
                             unsigned long long flags) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!ptr || !granular(0, size) || flags != 0 || (alignment & (alignment - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t align = alignment > kGranularity ? alignment : kGranularity;
  Reservation* r = free_slot(g_reservations);
  if (!r || size > SIZE_MAX - align) return CUDA_ERROR_OUT_OF_MEMORY;
  auto* base = static_cast<char*>(raw_mmap(nullptr, size + align, PROT_NONE, MAP_NORESERVE));
  if (!base) return CUDA_ERROR_OUT_OF_MEMORY;
  char* start = base + (round_up(reinterpret_cast<uintptr_t>(base), align) -
                        reinterpret_cast<uintptr_t>(base));
  if (start > base) raw_munmap(base, size_t(start - base));
  if (start + size < base + size + align) raw_munmap(start + size, size_t(base + align - start));
  *r = Reservation{true, reinterpret_cast<uintptr_t>(start), size};
  *ptr = r->addr;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  for (Reservation& r : g_reservations) {
    if (!r.live || r.addr != ptr || r.size != size) continue;
    for (const Mapping& m : g_mappings)
      if (overlaps(m, ptr, size)) return CUDA_ERROR_INVALID_VALUE;
    raw_munmap(reinterpret_cast<void*>(ptr), size);
    r.live = false;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  Physical* p = find_physical(handle);
  if (!p || p->released || flags != 0 || offset != 0 || !granular(ptr, size) || size > p->size ||
      !reservation_containing(ptr, size))
    return CUDA_ERROR_INVALID_VALUE;
  for (const Mapping& m : g_mappings)
    if (overlaps(m, ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  Mapping* m = free_slot(g_mappings);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  *m = Mapping{true, ptr, size, p};
  p->maps++;
  return CUDA_SUCCESS;
}

// Unmaps every mapping in [ptr, ptr + size); one that lies only partly inside is an error.
// A range of a reservation with nothing mapped unmaps fine, as on an H100.
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!granular(ptr, size) || !reservation_containing(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  for (const Mapping& m : g_mappings)
    if (overlaps(m, ptr, size) && (m.addr < ptr || m.addr + m.size > ptr + size))
      return CUDA_ERROR_INVALID_VALUE;
  for (Mapping& m : g_mappings) {
    if (!overlaps(m, ptr, size)) continue;
    m.live = false;
    m.physical->maps--;
    give_back_if_unused(m.physical);
  }
  raw_mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_FIXED | MAP_NORESERVE);
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  Lock lock;
  if (CUresult r = initialized()) return r;
  if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(desc[i].location.id))
      return CUDA_ERROR_INVALID_VALUE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot = PROT_READ | PROT_WRITE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE) prot = PROT_READ;
  }
  // The whole range must be mapped: walk it mapping by mapping.
  for (uint64_t at = ptr; at < ptr + size;) {
    const Mapping* next = nullptr;
    for (const Mapping& m : g_mappings)
      if (m.live && m.addr <= at && at < m.addr + m.size) next = &m;
    if (!next) return CUDA_ERROR_INVALID_VALUE;
    at = next->addr + next->size;
  }
  return raw_mprotect(reinterpret_cast<void*>(ptr), size, prot) ? CUDA_SUCCESS
                                                                : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
