// dlclose, interposed so that a library's module is reported before it goes
// (agent/module_unload.h), and, with C stacks on, what the frame-pointer walk learnt of the
// code it unmapped is forgotten after (agent/unloaded_code.h). What dlclose does does not
// depend on who calls it, so glibc's is called from C.
#include <errno.h>

#include "agent/module_unload.h"
#include "agent/real_functions.h"
#include "agent/stacks.h"
#include "agent/unloaded_code.h"

#define MEMTAP_HOOK extern "C" __attribute__((visibility("default")))

MEMTAP_HOOK int dlclose(void* handle) {
  using namespace memtap;
  auto* real = real_function(g_real.dlclose);
  if (!real) return -1;
  report_modules_before_unload();
  if (!g_stack_settings.c) return real(handle);
  LoadedCode before = note_loaded_code();
  int result = real(handle);
  forget_unloaded_code(&before);
  return result;
}
