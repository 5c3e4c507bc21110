// A symbol's address in a loaded object, read from the object's own dynamic symbol table.
//
// For where dlsym cannot be asked. Finding glibc's dlsym and dlvsym, which the
// agent interposes itself (agent/hooks/dl_hooks.cpp). A versioned reference such as
// dlsym@GLIBC_2.2.5 would bind to our own unversioned definition, and the versions an
// application binds differ between glibc releases, so the address is read from the
// object's DT_GNU_HASH table instead. Allocates nothing; takes the loader's lock only
// through dl_iterate_phdr.
#pragma once

namespace memtap {

// The address of `name` (any version) defined in the first loaded object whose file name
// starts with `object` ("libc.so.6", "libcudart.so"); nullptr when there is no such object
// or symbol, or the object has no GNU hash table. Also finds what an object loaded with
// RTLD_LOCAL defines, which dlsym(RTLD_NEXT) does not see.
void* find_loaded_symbol(const char* object, const char* name);

}  // namespace memtap
