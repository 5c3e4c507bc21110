// Symbol lookup through a loaded object's DT_GNU_HASH table; see elf_symbols.h.
#include "agent/hooks/elf_symbols.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

namespace memtap {
namespace {

struct Query {
  const char* object;
  const char* name;
  void* found;
};

uint32_t gnu_hash(const char* s) {
  uint32_t h = 5381;
  for (; *s; ++s) h = h * 33 + static_cast<unsigned char>(*s);
  return h;
}

bool path_names(const char* path, const char* object) {
  if (!path) return false;
  const char* slash = strrchr(path, '/');
  const char* file = slash ? slash + 1 : path;
  return strncmp(file, object, strlen(object)) == 0;
}

// The dynamic section's pointers are already relocated by ld.so on glibc (absolute
// addresses); on a few other loaders they stay offsets from the load base.
template <typename T>
const T* dyn_ptr(ElfW(Addr) value, ElfW(Addr) base) {
  return reinterpret_cast<const T*>(value < base ? value + base : value);
}

void* lookup(const dl_phdr_info* info, const char* name) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  if (!dyn) return nullptr;
  const uint32_t* gnu = nullptr;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    if (dyn->d_tag == DT_GNU_HASH) gnu = dyn_ptr<uint32_t>(dyn->d_un.d_ptr, info->dlpi_addr);
    if (dyn->d_tag == DT_SYMTAB) symtab = dyn_ptr<ElfW(Sym)>(dyn->d_un.d_ptr, info->dlpi_addr);
    if (dyn->d_tag == DT_STRTAB) strtab = dyn_ptr<char>(dyn->d_un.d_ptr, info->dlpi_addr);
  }
  if (!gnu || !symtab || !strtab) return nullptr;
  const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
  if (nbuckets == 0) return nullptr;
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(gnu + 4);
  const uint32_t* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_size);
  const uint32_t* chain = buckets + nbuckets;
  const uint32_t h = gnu_hash(name);
  for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; ++i) {
    const uint32_t ch = chain[i - symoffset];
    const ElfW(Sym)& sym = symtab[i];
    if ((ch | 1) == (h | 1) && sym.st_shndx != SHN_UNDEF && sym.st_value != 0 &&
        strcmp(strtab + sym.st_name, name) == 0) {
      return reinterpret_cast<void*>(info->dlpi_addr + sym.st_value);
    }
    if (ch & 1) break;  // the end of this hash's chain
  }
  return nullptr;
}

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<Query*>(data);
  if (!path_names(info->dlpi_name, q->object)) return 0;
  q->found = lookup(info, q->name);
  return 1;
}

}  // namespace

void* find_loaded_symbol(const char* object, const char* name) {
  Query q{object, name, nullptr};
  dl_iterate_phdr(visit, &q);
  return q.found;
}

}  // namespace memtap
