// See module_debug.h. One Dwfl session per module (not one per process): modules loaded
// over an unloaded one's range would overlap in one session, which libdwfl refuses; the
// Symbolizer picks the module, this only reads it.
#include "monitor/symbols/module_debug.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "monitor/symbols/demangle.h"

namespace memtap {
namespace {

// The standard search for separate debug information: the file's own sections, then
// .gnu_debuglink and /usr/lib/debug/.build-id/ (debuginfo_path null: libdwfl's default).
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

constexpr int kMaxInlineDepth = 64;

// A source path as a person can open it: relative ones (a compiler given relative paths, as
// ccache's base directory makes them) are relative to the unit's compilation directory, and
// "/build/x/../src/st.c" reads "/build/src/st.c".
std::string normal_path(Dwarf_Die* cudie, const char* path) {
  std::filesystem::path p(path);
  Dwarf_Attribute attr;
  const char* comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
  if (p.is_relative() && comp_dir != nullptr) p = std::filesystem::path(comp_dir) / p;
  return p.lexically_normal().string();
}

std::string die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  // The linkage name says namespace, class, template arguments and parameters; C functions
  // have only a name.
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (const char* linkage = dwarf_formstring(dwarf_attr_integrate(die, at, &attr)))
      return demangle(linkage);
  }
  const char* name = dwarf_diename(die);
  return name ? name : "";
}

// The first function (inlined instance or real) among scopes[from..n), innermost first.
bool innermost_function(const Dwarf_Die* scopes, int n, int from, Dwarf_Die* function) {
  for (int i = from; i < n; ++i) {
    const int tag = dwarf_tag(const_cast<Dwarf_Die*>(&scopes[i]));
    if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) {
      *function = scopes[i];
      return true;
    }
  }
  return false;
}

// Where an inlined function was called from: its DW_AT_call_file and DW_AT_call_line.
void call_site(Dwarf_Die* cudie, Dwarf_Die* inlined, std::string* file, int* line) {
  Dwarf_Attribute attr;
  Dwarf_Word file_index = 0, line_number = 0;
  file->clear();
  *line = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &line_number) == 0)
    *line = int(line_number);
  Dwarf_Files* files = nullptr;
  size_t count = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &file_index) == 0 &&
      dwarf_getsrcfiles(cudie, &files, &count) == 0 && file_index < count) {
    if (const char* name = dwarf_filesrc(files, file_index, nullptr, nullptr))
      *file = normal_path(cudie, name);
  }
}

}  // namespace

ModuleDebug::ModuleDebug(const LoadedModule& module) {
  dwfl_ = dwfl_begin(&kCallbacks);
  if (dwfl_ == nullptr) {
    why_ = "cannot read it";
    return;
  }
  dwfl_report_begin(dwfl_);
  // add_p_vaddr: the load bias is what is added to the file's addresses (for an executable
  // that is not position-independent libdwfl takes 0, as the process has).
  Dwfl_Module* m =
      dwfl_report_elf(dwfl_, module.path.c_str(), module.path.c_str(), -1, module.load_bias, true);
  dwfl_report_end(dwfl_, nullptr, nullptr);
  if (m == nullptr) {
    why_ = "cannot read it";
    return;
  }
  if (!module.build_id.empty()) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int n = dwfl_module_build_id(m, &bits, &vaddr);
    if (n <= 0 || size_t(n) != module.build_id.size() ||
        memcmp(bits, module.build_id.data(), size_t(n)) != 0) {
      why_ = "build-id differs";
      return;
    }
  }
  module_ = m;
}

ModuleDebug::~ModuleDebug() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
}

std::vector<SourceFrame> ModuleDebug::source_frames(uint64_t address) const {
  std::vector<SourceFrame> frames;
  if (module_ == nullptr) return frames;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(module_, address, &bias);
  if (cudie == nullptr) return frames;
  SourceFrame here;
  if (Dwfl_Line* line = dwfl_module_getsrc(module_, address)) {
    if (const char* file = dwfl_lineinfo(line, nullptr, &here.line, nullptr, nullptr, nullptr))
      here.file = normal_path(cudie, file);
  }
  // The innermost function around the address (an inlined instance or a real function);
  // each inlined one's call site is the position in the function it was inlined into, whose
  // scopes are the inlined instance's own (dwarf_getscopes_die), not those at the address.
  Dwarf_Die* scopes = nullptr;
  Dwarf_Die function;
  const int n = dwarf_getscopes(cudie, address - bias, &scopes);
  bool found = innermost_function(scopes, n, 0, &function);
  free(scopes);
  // Bounded: a corrupt DWARF must not keep this going.
  for (int depth = 0; found && depth < kMaxInlineDepth; ++depth) {
    here.function = die_name(&function);
    here.inlined = dwarf_tag(&function) == DW_TAG_inlined_subroutine;
    frames.push_back(here);
    if (!here.inlined) break;
    call_site(cudie, &function, &here.file, &here.line);
    scopes = nullptr;
    const int outer = dwarf_getscopes_die(&function, &scopes);  // [0]: the instance itself
    found = innermost_function(scopes, outer, 1, &function);
    free(scopes);
  }
  // The outermost is the frame the address is really in, whatever the scopes said.
  if (!frames.empty()) frames.back().inlined = false;
  // Line information without a function around it (assembly, a CU without subprograms):
  // the position still helps; the name comes from the symbol table.
  if (frames.empty() && !here.file.empty()) {
    here.function = nearest_symbol(address).name;
    frames.push_back(here);
  }
  return frames;
}

NearestSymbol ModuleDebug::nearest_symbol(uint64_t address) const {
  NearestSymbol nearest;
  if (module_ == nullptr) return nearest;
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char* name =
      dwfl_module_addrinfo(module_, address, &offset, &sym, nullptr, nullptr, nullptr);
  if (name == nullptr || name[0] == '\0') return nearest;
  nearest.name = demangle(name);
  nearest.offset = offset;
  return nearest;
}

}  // namespace memtap
