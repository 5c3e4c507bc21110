// dlsym and dlvsym, interposed because the CUDA runtime, PyTorch and Triton find driver
// functions with dlsym on their own handle of libcuda: a lookup of a driver function we
// hook returns our wrapper (cuda_entry_points.h). Every other lookup returns what glibc
// returns.
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

}  // namespace

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

__attribute__((visibility("hidden"), used)) void* memtap_dlsym_on_handle(void* handle,
                                                                         const char* symbol) {
  return memtap::wrap_driver_symbol(symbol, memtap_libc_dlsym(handle, symbol));
}

__attribute__((visibility("hidden"), used)) void* memtap_dlvsym_on_handle(void* handle,
                                                                          const char* symbol,
                                                                          const char* version) {
  return memtap::wrap_driver_symbol(symbol, memtap_libc_dlvsym(handle, symbol, version));
}

}  // extern "C"

// dlsym(handle, symbol) and dlvsym(handle, symbol, version): resolve glibc's on the first
// call (the three argument registers saved, the stack kept 16-byte aligned for the call),
// then RTLD_NEXT (-1) and RTLD_DEFAULT (0) jump to glibc's, other handles to the C above.
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
  jmp *\libc(%rip)
  .size \name, .-\name
  .endm

  MEMTAP_DL_ENTRY dlsym, memtap_dlsym_on_handle, memtap_libc_dlsym
  MEMTAP_DL_ENTRY dlvsym, memtap_dlvsym_on_handle, memtap_libc_dlvsym
  .purgem MEMTAP_DL_ENTRY
)");

#endif  // __x86_64__
