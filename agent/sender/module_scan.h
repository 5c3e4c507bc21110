// The objects loaded in the program (the executable, its shared libraries, dlopen()ed ones,
// the vDSO), for Batch.modules (wire.capnp LoadedModule): what the monitor needs to
// symbolise the return addresses of C stacks. All of them at the first scan, then only
// those loaded since.
//
// On the sender thread, which may allocate (its own libc). The listing is the agent's
// (MemtapSenderConfig::iterate_modules): the sender lives in a link namespace of its own,
// and glibc's dl_iterate_phdr lists the namespace of its caller, so called from here it
// would list the sender's private libraries, not the program's.
#pragma once

#include <link.h>

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace memtap {

// One loaded object, as Batch.modules carries it.
struct ScannedModule {
  std::string path;        // absolute; the executable's from /proc/self/exe; "[vdso]" for the vDSO
  uint64_t load_bias = 0;  // dlpi_addr
  uint64_t start = 0;      // [start, end): the lowest and one past the highest PT_LOAD address
  uint64_t end = 0;
  std::string build_id;  // NT_GNU_BUILD_ID's bytes; empty when it has none
};

// dl_iterate_phdr's signature: the agent's (base namespace) listing.
using IterateModulesFn = int (*)(int (*callback)(dl_phdr_info*, size_t, void*), void* data);

// What was reported so far.
struct ModuleScan {
  // dlpi_adds / dlpi_subs at the last full scan: the loader counts every load and unload, so
  // while both are unchanged nothing new can be there and the scan stops at the first
  // object. ~0: no scan yet.
  unsigned long long adds = ~0ull;
  unsigned long long subs = ~0ull;
  // (bias, start, name as listed) of those loaded at the last full scan, all reported
  std::set<std::tuple<uint64_t, uint64_t, std::string>> reported;
  std::string executable;  // /proc/self/exe, read once (a process's executable never changes)
};

// Appends to `out` the objects loaded now that `scan` has not reported yet, and notes them
// as reported. An object loaded and unloaded again between two scans is never seen.
void scan_new_modules(IterateModulesFn iterate, ModuleScan* scan, std::vector<ScannedModule>* out);

// A new monitor has heard of none of them: the next scan reports everything again.
void forget_reported_modules(ModuleScan* scan);

}  // namespace memtap
