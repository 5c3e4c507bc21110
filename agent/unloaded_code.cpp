// See unloaded_code.h.
#include "agent/unloaded_code.h"

#include <link.h>

#include "agent/raw_syscalls.h"
#include "agent/unwind.h"

namespace memtap {
namespace {

// Room for this many objects (a PyTorch process loads a few hundred); beyond, the counters
// alone decide and everything is forgotten when something went.
constexpr size_t kRangesBytes = 64 * 1024;

CodeRange range_of(const dl_phdr_info* info) {
  CodeRange r{UINTPTR_MAX, 0, uintptr_t(info->dlpi_addr), info->dlpi_phdr};
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    uintptr_t lo = uintptr_t(info->dlpi_addr + ph.p_vaddr);
    if (lo < r.lo) r.lo = lo;
    if (lo + ph.p_memsz > r.hi) r.hi = lo + ph.p_memsz;
  }
  return r;
}

int note_object(dl_phdr_info* info, size_t, void* arg) {
  auto* code = static_cast<LoadedCode*>(arg);
  code->adds = info->dlpi_adds;
  code->subs = info->dlpi_subs;
  CodeRange r = range_of(info);
  if (r.lo >= r.hi) return 0;  // no code (the vdso has some; a data-only object has none)
  if (code->count == code->capacity) {
    code->complete = false;
    return 0;
  }
  code->ranges[code->count++] = r;
  return 0;
}

// After the dlclose: an object of `before` still loaded is marked (its range emptied), so
// that what is left of `before` is what went.
struct AfterPass {
  LoadedCode* before;
  unsigned long long adds, subs;
};

int mark_survivor(dl_phdr_info* info, size_t, void* arg) {
  auto* pass = static_cast<AfterPass*>(arg);
  pass->adds = info->dlpi_adds;
  pass->subs = info->dlpi_subs;
  for (size_t i = 0; i < pass->before->count; ++i) {
    CodeRange& r = pass->before->ranges[i];
    if (r.base == uintptr_t(info->dlpi_addr) && r.phdr == info->dlpi_phdr) r.hi = r.lo;
  }
  return 0;
}

void release(LoadedCode* code) {
  if (code->ranges) raw_munmap(code->ranges, kRangesBytes);
  code->ranges = nullptr;
  code->count = code->capacity = 0;
}

}  // namespace

LoadedCode note_loaded_code() {
  LoadedCode code;
  code.ranges = static_cast<CodeRange*>(raw_mmap_anon(kRangesBytes));
  code.capacity = code.ranges ? kRangesBytes / sizeof(CodeRange) : 0;
  code.complete = true;
  dl_iterate_phdr(note_object, &code);
  return code;
}

void forget_unloaded_code(LoadedCode* before) {
  AfterPass pass{before, 0, 0};
  dl_iterate_phdr(mark_survivor, &pass);
  if (pass.subs != before->subs) {  // something was unloaded
    for (size_t i = 0; i < before->count; ++i) {
      const CodeRange& r = before->ranges[i];
      if (r.lo < r.hi) forget_unmapped_code(r.lo, r.hi);
    }
    // Loaded meanwhile (an object found at the same place may be a new one), or not every
    // object was noted: what went cannot be told exactly.
    if (!before->complete || pass.adds != before->adds) forget_all_verdicts();
  }
  release(before);
}

}  // namespace memtap
