// The code a dlclose unmapped: the executable ranges of the objects loaded before it and gone
// after it (the object closed and the dependencies that went with it), which the C stacks'
// unwinding must stop trusting what it learnt of (agent/unwind.h, forget_unmapped_code)
// before other code, mapped there later, is walked with it.
//
// A dlclose of a handle that is still referenced unmaps nothing, and then nothing is
// forgotten. glibc's dl_phdr_info counters say whether anything was unloaded (dlpi_subs) and
// whether anything was loaded meanwhile (dlpi_adds, another thread's dlopen): then an object
// found at the same place after might be a new one, and every verdict is forgotten (as when
// more objects are loaded than fit the note). Forgetting is always safe; it costs one
// fallback per stack to learn again.
//
// Left open: another thread's dlopen that maps new code over the range after the unmap and
// captures a stack in it before forget_unloaded_code has run (a window of the dlclose's own
// return path).
#pragma once

#include <cstddef>
#include <cstdint>

namespace memtap {

struct CodeRange {
  uintptr_t lo, hi;  // the object's executable PT_LOAD segments, [lo, hi)
  uintptr_t base;    // dlpi_addr and dlpi_phdr: which object it was
  const void* phdr;
};

struct LoadedCode {
  unsigned long long adds = 0, subs = 0;  // dl_phdr_info's counters when noted
  CodeRange* ranges = nullptr;            // raw pages, not the traced allocator's
  size_t count = 0, capacity = 0;
  bool complete = false;  // every loaded object fitted in `ranges`
};

// Before the real dlclose.
LoadedCode note_loaded_code();

// After it: forgets the code of the objects of `before` that are no longer loaded (every
// verdict when that cannot be told exactly), and releases `before`.
void forget_unloaded_code(LoadedCode* before);

}  // namespace memtap
