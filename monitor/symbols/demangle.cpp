// See demangle.h.
#include "monitor/symbols/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace memtap {

std::string demangle(const char* name) {
  if (name == nullptr) return "";
  // Only "_Z..." names are mangled; __cxa_demangle would also turn a C name such as "f" into
  // a type name ("float").
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, decltype(&free)> plain(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                               &free);
  if (status != 0 || plain == nullptr) return name;
  return plain.get();
}

}  // namespace memtap
