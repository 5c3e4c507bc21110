// See frame_text.h.
#include "monitor/symbols/frame_text.h"

#include <cinttypes>
#include <cstdio>

namespace memtap {
namespace {

std::string hex(uint64_t v) {
  char text[24];
  snprintf(text, sizeof text, "0x%" PRIx64, v);
  return text;
}

}  // namespace

std::string source_frame_text(const SymbolFrame& frame) {
  std::string text = frame.function.empty() ? "??" : frame.function;
  if (!frame.file.empty()) text += " at " + frame.file + ":" + std::to_string(frame.line);
  if (frame.inlined) return text + " (inlined)";
  return text + " (" + frame.module + "+" + hex(frame.offset) + ")";
}

std::string symbol_frame_text(const SymbolFrame& frame, uint64_t symbol_offset) {
  return frame.module + "(" + frame.function + "+" + hex(symbol_offset) + ") [" +
         hex(frame.address) + "]";
}

std::string module_frame_text(const SymbolFrame& frame, const std::string& why) {
  std::string text = frame.module + "(+" + hex(frame.offset) + ") [" + hex(frame.address) + "]";
  if (!why.empty()) text += " (" + why + ")";
  return text;
}

std::string unknown_frame_text(uint64_t address) {
  return "?? [" + hex(address) + "]";
}

}  // namespace memtap
