// One loaded object's debug information and symbol tables, opened once with elfutils'
// libdwfl: the object's file as the process mapped it (at its load bias), its DWARF from the
// file or from a separate debug file (/usr/lib/debug/.build-id/xx/yyyy.debug, a
// .gnu_debuglink), its .symtab or .dynsym.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/symbols/symbolizer.h"

typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;

namespace memtap {

// What the debug information says of one address: a function and its source position,
// innermost (inlined) first; the last is the function the code was compiled into.
struct SourceFrame {
  std::string function;  // demangled; empty when the DWARF does not name it
  std::string file;
  int line = 0;
  bool inlined = false;
};

// The nearest symbol at or before an address, from the symbol tables.
struct NearestSymbol {
  std::string name;     // demangled; empty when none
  uint64_t offset = 0;  // from the symbol's start to the address asked for
};

class ModuleDebug {
 public:
  // Opens the module's file. A missing or unreadable file, or one that is not ELF, leaves
  // an unusable ModuleDebug (usable() false, why() says so); nothing throws.
  explicit ModuleDebug(const LoadedModule& module);
  ~ModuleDebug();
  ModuleDebug(const ModuleDebug&) = delete;
  ModuleDebug& operator=(const ModuleDebug&) = delete;

  // False when names from this file would be wrong or there are none to read.
  bool usable() const { return module_ != nullptr; }
  // Why not usable: "build-id differs" (the file was rebuilt since the process loaded it),
  // "cannot read it"; "" when usable.
  const std::string& why() const { return why_; }

  // The frames of an address in the process (the call's own address, not the return
  // address); empty without debug information covering it.
  std::vector<SourceFrame> source_frames(uint64_t address) const;
  NearestSymbol nearest_symbol(uint64_t address) const;

 private:
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* module_ = nullptr;
  std::string why_;
};

}  // namespace memtap
