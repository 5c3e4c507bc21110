// See symbolizer.h. Which module an address is in, the cache per address, and the order of
// the fallbacks: debug information (module_debug), else the symbol tables, else the module
// and offset (frame_text's forms).
#include "monitor/symbols/symbolizer.h"

#include <unordered_map>

#include "monitor/symbols/frame_text.h"
#include "monitor/symbols/module_debug.h"

namespace memtap {

struct Symbolizer::Impl {
  std::vector<LoadedModule> modules;
  // Opened when the module's first address is asked for (most loaded objects never are).
  std::vector<std::unique_ptr<ModuleDebug>> debug;
  std::unordered_map<uint64_t, std::vector<SymbolFrame>> cache;

  // The index of the module the address is in; -1 outside every module.
  int module_at(uint64_t address) const {
    // The latest loaded wins over an older one that was unloaded from the same range.
    for (size_t i = modules.size(); i-- > 0;) {
      if (address >= modules[i].start && address < modules[i].end) return int(i);
    }
    return -1;
  }

  const ModuleDebug& debug_of(int index) {
    if (!debug[index]) debug[index] = std::make_unique<ModuleDebug>(modules[index]);
    return *debug[index];
  }

  std::vector<SymbolFrame> symbolize(uint64_t return_address);
};

std::vector<SymbolFrame> Symbolizer::Impl::symbolize(uint64_t return_address) {
  // The return address is the instruction after the call; the call is what the stack means,
  // and it can be the last instruction of a function or of an inlined range.
  const uint64_t address = return_address - 1;
  SymbolFrame base;
  base.address = return_address;
  const int index = module_at(address);
  if (index < 0) {
    base.text = unknown_frame_text(return_address);
    return {base};
  }
  const LoadedModule& module = modules[index];
  base.module = module.path;
  base.offset = return_address - module.load_bias;
  const ModuleDebug& debug = debug_of(index);
  if (!debug.usable()) {
    base.text = module_frame_text(base, debug.why());
    return {base};
  }
  std::vector<SymbolFrame> frames;
  for (const SourceFrame& source : debug.source_frames(address)) {
    SymbolFrame frame = base;
    frame.function = source.function;
    frame.file = source.file;
    frame.line = source.line;
    frame.inlined = source.inlined;
    frame.text = source_frame_text(frame);
    frames.push_back(std::move(frame));
  }
  if (!frames.empty()) return frames;
  const NearestSymbol symbol = debug.nearest_symbol(address);
  if (symbol.name.empty()) {
    base.text = module_frame_text(base, "");
  } else {
    base.function = symbol.name;
    // Counted to the return address, as backtrace_symbols counts.
    base.text = symbol_frame_text(base, symbol.offset + 1);
  }
  return {base};
}

Symbolizer::Symbolizer() : impl_(std::make_unique<Impl>()) {}
Symbolizer::~Symbolizer() = default;

void Symbolizer::add_module(const LoadedModule& module) {
  impl_->modules.push_back(module);
  impl_->debug.emplace_back();
  // An address cached as another module's, or as in none, may be in this one now.
  impl_->cache.clear();
}

const std::vector<LoadedModule>& Symbolizer::modules() const {
  return impl_->modules;
}

const std::vector<SymbolFrame>& Symbolizer::frames(uint64_t return_address) {
  auto [it, fresh] = impl_->cache.try_emplace(return_address);
  if (fresh) it->second = impl_->symbolize(return_address);
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
