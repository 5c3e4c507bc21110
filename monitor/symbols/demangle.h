// Demangling one symbol name (C++'s Itanium ABI), for the frames of a C stack.
#pragma once

#include <string>

namespace memtap {

// "_ZN2ns4PoolIiE4growEi" -> "ns::Pool<int>::grow(int)"; a name that is not mangled (a C
// function) or that cannot be demangled comes back as it is. Null gives "".
std::string demangle(const char* name);

}  // namespace memtap
