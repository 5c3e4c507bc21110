// Turning the return addresses of a C stack into frames a person can read.
//
// The agent captures raw return addresses only (its hot path must stay cheap) and tells the
// monitor, per process, which objects are loaded where (wire.capnp LoadedModule). This
// symbolises them in the monitor, off the training process's CPU, once per distinct address:
// function names demangled, file:line and inlined frames from the objects' debug information
// (elfutils' libdw), else the nearest symbol of the object's symbol tables, else
// "module(+0xoffset)".
//
// Text of one frame (a line of msMemScope's "Call Stack(C)" column):
//   with debug information:  "deep_leaf_alloc at /src/st.c:3 (/abs/st+0x1161)"
//   an inlined frame:        "helper at /src/st.c:8 (inlined)" (before the frame it is in)
//   from a symbol table:     "/abs/libfoo.so(foo_alloc+0x1c) [0x7f12345678]" (glibc's
//                            backtrace_symbols form, as msMemScope writes every frame)
//   nothing known:           "/abs/libfoo.so(+0x1234) [0x7f12345678]", "?? [0x1234]" outside
//                            every module; "... (build-id differs)" when the file is not
//                            the one the process loaded, "... (cannot read it)" when missing
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memtap {

// One loaded object of one process (wire.capnp LoadedModule).
struct LoadedModule {
  std::string path;  // absolute
  uint64_t load_bias = 0;
  uint64_t start = 0;  // [start, end): its PT_LOAD segments in the process
  uint64_t end = 0;
  std::string build_id;  // raw bytes; empty when unknown
};

// One frame of a symbolised stack.
struct SymbolFrame {
  std::string function;  // demangled; empty when unknown
  std::string file;      // source file; empty without debug information
  int line = 0;
  bool inlined = false;  // inlined into the frame that follows it
  std::string module;    // the object's path; empty outside every module
  uint64_t offset = 0;   // address - load bias: the address as the file has it
  uint64_t address = 0;  // as captured
  std::string text;      // the line above, ready for the Call Stack(C) column
};

// Symbolises the addresses of one process. Not thread-safe: one per process, used by one
// thread at a time. Debug information is opened when a module's first address is asked for
// and kept; results are cached per address.
class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // A module loaded (in the order the agent reports them; one loaded later over the range of
  // an earlier, unloaded one takes its place).
  void add_module(const LoadedModule& module);
  // Every module added, in order (a fork() child starts from its parent's).
  const std::vector<LoadedModule>& modules() const;

  // The frames of one return address, innermost (inlined) first. A return address is the
  // instruction after the call: what is looked up is address - 1. The reference is valid
  // until the next add_module (which empties the cache: an address may be in the new module).
  const std::vector<SymbolFrame>& frames(uint64_t return_address);

  // A whole stack, innermost first, as Call Stack(C) text: one frame a line, inlined frames
  // included.
  std::string stack_text(const uint64_t* return_addresses, size_t count);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtap
