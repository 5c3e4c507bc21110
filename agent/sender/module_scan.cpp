// Listing the program's loaded objects; see module_scan.h.
#include "agent/sender/module_scan.h"

#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace memtap {
namespace {

// One object as the callback saw it. Everything is copied while the loader lock is held
// (the callback runs under it): after it, a dlclose on another thread may unmap the object.
// Paths are resolved after, off the lock (realpath reads the file system).
struct Seen {
  ScannedModule module;
  bool executable = false;
  bool vdso = false;
};

struct Listing {
  ModuleScan* scan = nullptr;
  uintptr_t vdso_base = 0;
  bool first = true;
  bool changed = false;  // dlpi_adds / dlpi_subs differ from the last full scan's
  std::vector<Seen> seen;
};

// The build-id's bytes from the object's PT_NOTE segments, mapped in memory.
std::string build_id_of(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const size_t align = ph.p_align == 8 ? 8 : 4;
    auto pad = [align](size_t n) { return (n + align - 1) & ~(align - 1); };
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (size_t(end - p) >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) note;
      memcpy(&note, p, sizeof note);
      const char* name = p + sizeof note;
      const size_t name_room = pad(note.n_namesz);
      if (name_room > size_t(end - name)) break;
      const char* desc = name + name_room;
      const size_t desc_room = pad(note.n_descsz);
      if (desc_room > size_t(end - desc)) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        return std::string(desc, note.n_descsz);
      }
      p = desc + desc_room;
    }
  }
  return {};
}

int visit(dl_phdr_info* info, size_t size, void* data) {
  auto* listing = static_cast<Listing*>(data);
  const bool first = listing->first;
  listing->first = false;
  if (first) {
    // Counters are in every entry; the first one says whether anything changed.
    if (size < offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
      listing->changed = true;  // no counters: scan every time
    } else {
      listing->changed =
          info->dlpi_adds != listing->scan->adds || info->dlpi_subs != listing->scan->subs;
      listing->scan->adds = info->dlpi_adds;
      listing->scan->subs = info->dlpi_subs;
    }
    if (!listing->changed) return 1;
  }
  Seen s;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = std::min<uint64_t>(lo, info->dlpi_addr + ph.p_vaddr);
    hi = std::max<uint64_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (lo >= hi) return 0;
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  s.module.load_bias = info->dlpi_addr;
  s.module.start = lo;
  s.module.end = hi;
  s.module.path = name;
  // The vDSO: the kernel's image at AT_SYSINFO_EHDR, named by the loader after its soname.
  s.vdso = (listing->vdso_base != 0 && lo <= listing->vdso_base && listing->vdso_base < hi) ||
           strncmp(name, "linux-vdso", 10) == 0 || strncmp(name, "linux-gate", 10) == 0;
  // The loader names the program itself "" (it is the first object listed).
  s.executable = !s.vdso && name[0] == 0 && first;
  s.module.build_id = build_id_of(info);
  listing->seen.push_back(std::move(s));
  return 0;
}

// The absolute path of a name the loader gave: as it is when absolute, else resolved from
// the current directory (a relative dlopen path; the loader keeps it as it was given). A file
// gone since is still named from the current directory: the monitor takes absolute paths only.
std::string absolute(const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;
  char resolved[PATH_MAX];
  if (realpath(name.c_str(), resolved)) return resolved;
  std::string path = getcwd(resolved, sizeof resolved) ? resolved : "";
  return path + "/" + name;
}

}  // namespace

void scan_new_modules(IterateModulesFn iterate, ModuleScan* scan, std::vector<ScannedModule>* out) {
  if (!iterate) return;
  Listing listing;
  listing.scan = scan;
  listing.vdso_base = uintptr_t(getauxval(AT_SYSINFO_EHDR));
  iterate(visit, &listing);
  if (!listing.changed) return;
  // Those listed now, and no others: one unloaded and loaded again later is reported again,
  // over whatever took its place meanwhile.
  std::set<std::tuple<uint64_t, uint64_t, std::string>> now;
  for (Seen& s : listing.seen) {
    auto key = std::make_tuple(s.module.load_bias, s.module.start, s.module.path);
    now.insert(key);
    if (scan->reported.count(key) != 0) continue;
    if (s.executable) {
      if (scan->executable.empty()) {
        char path[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        scan->executable = n > 0 ? std::string(path, size_t(n)) : std::string("[executable]");
      }
      s.module.path = scan->executable;
    } else if (s.vdso) {
      s.module.path = "[vdso]";
    } else {
      s.module.path = absolute(s.module.path);
    }
    out->push_back(std::move(s.module));
  }
  scan->reported = std::move(now);
}

void forget_reported_modules(ModuleScan* scan) {
  scan->reported.clear();
  scan->adds = scan->subs = ~0ull;
}

}  // namespace memtap
