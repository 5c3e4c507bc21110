// dlsym and dlvsym, interposed because the CUDA runtime, PyTorch and Triton find driver
// functions with dlsym on their own handle of libcuda: a lookup of a driver function we
// hook returns our wrapper (cuda_entry_points.h). Every other lookup returns what glibc
// returns, with one exception: the agent defines each CUDA function it hooks, so in a process
// without CUDA glibc would find ours, and a program asking whether CUDA is there
// (dlsym(RTLD_DEFAULT, "cudaMalloc"), Python's hasattr(ctypes.CDLL(None), "cudaMalloc")) would
// hear yes under memtap and no without it. Such a lookup fails, as without memtap.
//
// glibc's RTLD_NEXT (and, across link namespaces, RTLD_DEFAULT) answers depend on who
// called: it reads its return address. So those two are not called from C here but jumped
// to from a few instructions of assembly, with the caller's return address still on the
// stack; only lookups on a real handle, where the caller does not matter, go through C.
// glibc's own dlsym and dlvsym are found in libc's symbol table (elf_symbols.h), since a
// lookup through dlsym would come back here.
//
// x86-64 only for now; elsewhere the agent does not interpose dlsym, and driver calls that
// bypass the runtime's symbols are not seen.
#include <dlfcn.h>

#include <cstring>

#include "agent/hooks/cuda_entry_points.h"
#include "agent/hooks/elf_symbols.h"

#if defined(__x86_64__)

extern "C" {

// glibc's functions, found on the first call. Globals because the assembly entry points
// jump through them.
__attribute__((visibility("hidden"))) void* (*memtap_libc_dlsym)(void*, const char*) = nullptr;
__attribute__((visibility("hidden"))) void* (*memtap_libc_dlvsym)(void*, const char*,
                                                                  const char*) = nullptr;

namespace {

void* no_dlsym(void*, const char*) {
  return nullptr;
}
void* no_dlvsym(void*, const char*, const char*) {
  return nullptr;
}

// Where a CUDA function's real definition would be: 'r' the runtime's (cuda*, __cuda*), 'd'
// the driver's (cu*), 0 not a CUDA name. The test every RTLD_DEFAULT lookup pays.
char cuda_library(const char* symbol) {
  if (!symbol || symbol[0] != 'c' || symbol[1] != 'u') {
    return symbol && strncmp(symbol, "__cuda", 6) == 0 ? 'r' : 0;
  }
  return strncmp(symbol, "cuda", 4) == 0 ? 'r' : 'd';
}

bool in_agent(const void* address) {
  static void* agent_base = nullptr;  // the same for every thread that finds it
  void* base = __atomic_load_n(&agent_base, __ATOMIC_RELAXED);
  Dl_info info{};
  if (!base) {
    if (dladdr(reinterpret_cast<const void*>(&in_agent), &info) == 0) return false;
    base = info.dli_fbase;
    __atomic_store_n(&agent_base, base, __ATOMIC_RELAXED);
  }
  return dladdr(address, &info) != 0 && info.dli_fbase == base;
}

}  // namespace

// Whether `symbol` names one of the agent's CUDA hooks and nothing loaded defines the real
// function (libcudart's or libcuda's, in the global scope or loaded RTLD_LOCAL): then a lookup
// would find only our hook, and fails instead. Asked again at every lookup, since CUDA may be
// loaded at any time. The answer does not depend on the caller, as glibc's may: a library that
// cannot see a libcudart loaded RTLD_LOCAL by another is still given our hook, which calls it.
// Its last step is a lookup that fails, so a caller's dlerror() names the symbol.
__attribute__((visibility("hidden"), used)) int memtap_hides_cuda_symbol(const char* symbol) {
  const char library = cuda_library(symbol);
  if (!library) return 0;
  // Ours when it comes first in the global scope (the agent is the first preloaded object;
  // the program itself, before it, may define such a function of its own).
  void* first = memtap_libc_dlsym(RTLD_DEFAULT, symbol);
  if (!first || !in_agent(first)) return 0;
  if (memtap::find_loaded_symbol(library == 'r' ? "libcudart.so" : "libcuda.so", symbol)) return 0;
  return memtap_libc_dlsym(RTLD_NEXT, symbol) == nullptr;
}

// Called by the entry points while the pointers are unset (and saves no state itself, so it
// may run on several threads at once: they compute the same addresses). dlsym lives in
// libc since glibc 2.34 and in libdl before.
__attribute__((visibility("hidden"), used)) void memtap_resolve_libc_dl() {
  void* s = memtap::find_loaded_symbol("libc.so.6", "dlsym");
  void* v = memtap::find_loaded_symbol("libc.so.6", "dlvsym");
  if (!s) s = memtap::find_loaded_symbol("libdl.so.2", "dlsym");
  if (!v) v = memtap::find_loaded_symbol("libdl.so.2", "dlvsym");
  // Without them every lookup fails rather than the process crashing on a null jump.
  memtap_libc_dlvsym = v ? reinterpret_cast<decltype(memtap_libc_dlvsym)>(v) : no_dlvsym;
  __atomic_store_n(&memtap_libc_dlsym,
                   s ? reinterpret_cast<decltype(memtap_libc_dlsym)>(s) : no_dlsym,
                   __ATOMIC_RELEASE);
}

namespace {

// What a handle's lookup of `symbol` returns, given what glibc `found`: nothing where that is
// one of our hooks hidden as above (the program's own handle, dlopen(NULL), whose scope is the
// global one), else the driver's wrapper or `found` itself.
void* on_handle_result(const char* symbol, void* found) {
  if (found && cuda_library(symbol) && in_agent(found) && memtap_hides_cuda_symbol(symbol)) {
    return nullptr;
  }
  return memtap::wrap_driver_symbol(symbol, found);
}

}  // namespace

__attribute__((visibility("hidden"), used)) void* memtap_dlsym_on_handle(void* handle,
                                                                         const char* symbol) {
  return on_handle_result(symbol, memtap_libc_dlsym(handle, symbol));
}

__attribute__((visibility("hidden"), used)) void* memtap_dlvsym_on_handle(void* handle,
                                                                          const char* symbol,
                                                                          const char* version) {
  return on_handle_result(symbol, memtap_libc_dlvsym(handle, symbol, version));
}

}  // extern "C"

// dlsym(handle, symbol) and dlvsym(handle, symbol, version): resolve glibc's on the first
// call (the three argument registers saved, the stack kept 16-byte aligned for the call),
// then RTLD_NEXT (-1) and RTLD_DEFAULT (0) jump to glibc's, other handles to the C above.
// Before the jump, memtap_hides_cuda_symbol is called (with the same registers saved) and a
// lookup it hides returns NULL at once; glibc still sees the caller's return address.
__asm__(R"(
  .macro MEMTAP_DL_ENTRY name, on_handle, libc
  .text
  .globl \name
  .type \name, @function
\name:
  cmpq $0, memtap_libc_dlsym(%rip)
  jne 1f
  pushq %rdi
  pushq %rsi
  pushq %rdx
  call memtap_resolve_libc_dl
  popq %rdx
  popq %rsi
  popq %rdi
1:
  cmpq $-1, %rdi
  je 2f
  testq %rdi, %rdi
  je 2f
  jmp \on_handle
2:
  pushq %rdi
  pushq %rsi
  pushq %rdx
  movq %rsi, %rdi
  call memtap_hides_cuda_symbol
  popq %rdx
  popq %rsi
  popq %rdi
  testl %eax, %eax
  jne 3f
  jmp *\libc(%rip)
3:
  xorl %eax, %eax
  ret
  .size \name, .-\name
  .endm

  MEMTAP_DL_ENTRY dlsym, memtap_dlsym_on_handle, memtap_libc_dlsym
  MEMTAP_DL_ENTRY dlvsym, memtap_dlvsym_on_handle, memtap_libc_dlvsym
  .purgem MEMTAP_DL_ENTRY
)");

#endif  // __x86_64__
