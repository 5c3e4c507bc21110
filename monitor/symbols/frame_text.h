// The text of one symbolised frame, in the forms symbolizer.h documents (a line of the
// Call Stack(C) column).
#pragma once

#include <cstdint>
#include <string>

#include "monitor/symbols/symbolizer.h"

namespace memtap {

// From debug information: "deep_leaf_alloc at /src/st.c:3 (/abs/st+0x1161)" for the frame
// that is a real call, "helper at /src/st.c:8 (inlined)" for one inlined into the next.
// Without a source position: "deep_leaf_alloc (/abs/st+0x1161)".
std::string source_frame_text(const SymbolFrame& frame);

// From a symbol table, glibc's backtrace_symbols form:
// "/abs/libfoo.so(foo_alloc+0x1c) [0x7f12345678]"; symbol_offset is from the symbol's start
// to the return address.
std::string symbol_frame_text(const SymbolFrame& frame, uint64_t symbol_offset);

// Nothing known but the module: "/abs/libfoo.so(+0x1234) [0x7f12345678]", followed by
// " (why)" when `why` is not empty (e.g. "build-id differs").
std::string module_frame_text(const SymbolFrame& frame, const std::string& why);

// Outside every module: "?? [0x1234]".
std::string unknown_frame_text(uint64_t address);

}  // namespace memtap
