// See symbolizer.h. This first version knows the modules only: every frame is
// "module(+0xoffset) [0xaddress]"; debug information and symbol tables come with libdw.
#include "monitor/symbols/symbolizer.h"

#include <cinttypes>
#include <cstdio>
#include <unordered_map>

namespace memtap {

struct Symbolizer::Impl {
  std::vector<LoadedModule> modules;
  std::unordered_map<uint64_t, std::vector<SymbolFrame>> cache;

  const LoadedModule* module_at(uint64_t address) const {
    // The latest loaded wins over an older one that was unloaded from the same range.
    for (auto it = modules.rbegin(); it != modules.rend(); ++it) {
      if (address >= it->start && address < it->end) return &*it;
    }
    return nullptr;
  }
};

Symbolizer::Symbolizer() : impl_(std::make_unique<Impl>()) {}
Symbolizer::~Symbolizer() = default;

void Symbolizer::add_module(const LoadedModule& module) {
  impl_->modules.push_back(module);
  impl_->cache.clear();
}

const std::vector<SymbolFrame>& Symbolizer::frames(uint64_t return_address) {
  auto [it, fresh] = impl_->cache.try_emplace(return_address);
  if (!fresh) return it->second;
  SymbolFrame frame;
  frame.address = return_address;
  char text[64];
  if (const LoadedModule* m = impl_->module_at(return_address - 1)) {
    frame.module = m->path;
    frame.offset = return_address - m->load_bias;
    snprintf(text, sizeof text, "(+0x%" PRIx64 ") [0x%" PRIx64 "]", frame.offset, return_address);
    frame.text = m->path + text;
  } else {
    snprintf(text, sizeof text, "?? [0x%" PRIx64 "]", return_address);
    frame.text = text;
  }
  it->second.push_back(std::move(frame));
  return it->second;
}

std::string Symbolizer::stack_text(const uint64_t* return_addresses, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) {
    for (const SymbolFrame& frame : frames(return_addresses[i])) {
      if (!text.empty()) text += '\n';
      text += frame.text;
    }
  }
  return text;
}

}  // namespace memtap
