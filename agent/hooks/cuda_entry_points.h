// Driver functions handed out by lookup: what dlsym on a handle of libcuda, cuGetProcAddress
// and cudaGetDriverEntryPoint return to the program is our wrapper (cuda_driver.cpp), which
// calls the function the lookup found.
//
// One wrapper serves one ABI of one function and keeps one real function. A lookup that
// would give a wrapper a second, different real function (two drivers in one process)
// returns that real function itself: memtap never changes which function a program calls,
// it only misses recording through that path.
#pragma once

#include <cstdint>

namespace memtap {

// dlsym/dlvsym on a handle found `real` under `symbol` ("cuMemAlloc_v2").
void* wrap_driver_symbol(const char* symbol, void* real);

// cuGetProcAddress(_v2) or cudaGetDriverEntryPoint(ByVersion) found `real` for the base
// name `symbol` ("cuMemAlloc"), `cuda_version` and `flags`: the version picks the ABI
// (cuMemAlloc from 3020 is cuMemAlloc_v2; below, the old one, which is not wrapped), the
// per-thread-stream flag the _ptsz variant.
void* wrap_driver_entry(const char* symbol, int cuda_version, uint64_t flags, void* real);

}  // namespace memtap
