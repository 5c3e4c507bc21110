// See unwind.h. glibc's backtrace(): libgcc_s's DWARF unwinder, correct without frame
// pointers, ~3 us a stack.
#include "agent/unwind.h"

#include <execinfo.h>

namespace memtap {

void unwind_warm_up() {
  void* addrs[4];
  backtrace(addrs, 4);  // dlopens libgcc_s now, not inside an application's malloc
}

int capture_return_addresses(void** out, int max) {
  return backtrace(out, max);
}

}  // namespace memtap
