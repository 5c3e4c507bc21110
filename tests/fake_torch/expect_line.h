// The stand-in torch's "expect ..." lines (tests/e2e/cuda_expectations.h reads them): one
// printf-style line on stdout, ending with the process and thread, written in one piece.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace standin {

inline void print_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void print_line(const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  n += snprintf(line + n, sizeof line - size_t(n), " pid=%d tid=%ld\n", int(getpid()),
                long(syscall(SYS_gettid)));
  // One write per line: the Python program's own prints go to the same descriptor.
  if (write(1, line, size_t(n)) < 0) abort();
}

}  // namespace standin
