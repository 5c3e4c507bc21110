/* An LD_PRELOAD shim for fake_cuda_test: writes to stderr one line per dlsym call on a handle
 * and per cuGetProcAddress lookup made through a pointer that dlsym or cuGetProcAddress
 * handed out, the way memtap's agent wraps them:
 *   dl-log: dlsym NAME in LIBRARY by CALLER      (file names without their directories)
 *   dl-log: gpa SYMBOL VERSION FLAGS
 * so that a test can see how a program and its CUDA runtime reach the driver. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/fake_cuda/fake_cuda_api.h"

static void* (*real_dlsym)(void*, const char*);
static PFN_cuGetProcAddress_v12000 real_get_proc_address;

static void log_line(const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  if (write(2, line, (size_t)n) < 0) return;
}

static const char* base_name(const char* path) {
  const char* slash = path ? strrchr(path, '/') : NULL;
  return slash ? slash + 1 : (path && *path ? path : "?");
}

static CUresult logging_get_proc_address(const char* symbol, void** pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  log_line("dl-log: gpa %s %d %llu", symbol, version, (unsigned long long)flags);
  CUresult r = real_get_proc_address(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && *pfn && strcmp(symbol, "cuGetProcAddress") == 0 && version >= 12000)
    *pfn = (void*)logging_get_proc_address;
  return r;
}

void* dlsym(void* handle, const char* name) {
  if (!real_dlsym) {
    real_dlsym = (void* (*)(void*, const char*))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym)
      real_dlsym = (void* (*)(void*, const char*))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  }
  void* fn = real_dlsym(handle, name);
  if (handle == RTLD_DEFAULT || handle == RTLD_NEXT) return fn;
  struct link_map* map = NULL;
  Dl_info caller;
  const char* library = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 ? map->l_name : NULL;
  const char* by = dladdr(__builtin_return_address(0), &caller) ? caller.dli_fname : NULL;
  log_line("dl-log: dlsym %s in %s by %s", name, base_name(library), base_name(by));
  if (fn && strcmp(name, "cuGetProcAddress_v2") == 0) {
    real_get_proc_address = (PFN_cuGetProcAddress_v12000)fn;
    return (void*)logging_get_proc_address;
  }
  return fn;
}
