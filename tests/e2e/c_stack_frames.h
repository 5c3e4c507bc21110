// Reading back C stacks from a recording, for the tests of C stacks: the Call Stack(C) of
// the MALLOCs of one size, and its frames in the forms of monitor/symbols/symbolizer.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memtap::e2e {

// One frame of Call Stack(C): its function (debug information or symbol table; empty when
// unknown), module and offset (address - load bias). A line of no known form has only text.
struct CFrame {
  std::string text, function, module;
  uint64_t offset = 0;
};

// "fn at file:line (module+0xoff)", "module(fn+0xoff) [0xaddr]" or "module(+0xoff)
// [0xaddr]"; inlined frames ("... (inlined)"), which have no module, left out; "?? [0xaddr]"
// (in no module) is a frame of text alone.
std::vector<CFrame> c_frames_of(const std::string& stack);

// The Call Stack(C) of every MALLOC of `size` bytes in the recording `db`, in ID order;
// a failure to read it fails the calling test.
std::vector<std::string> c_stacks_of_size(const std::string& db, int64_t size);

}  // namespace memtap::e2e
