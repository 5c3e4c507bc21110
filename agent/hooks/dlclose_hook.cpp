// dlclose, interposed so that a library's module is reported before it goes
// (agent/module_unload.h). What dlclose does does not depend on who calls it, so glibc's is
// called from C.
#include <errno.h>

#include "agent/module_unload.h"
#include "agent/real_functions.h"

#define MEMTAP_HOOK extern "C" __attribute__((visibility("default")))

MEMTAP_HOOK int dlclose(void* handle) {
  using namespace memtap;
  auto* real = real_function(g_real.dlclose);
  if (!real) return -1;
  report_modules_before_unload();
  return real(handle);
}
