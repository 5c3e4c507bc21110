// See positioned_io.h.
#include "monitor/store/positioned_io.h"

#include <unistd.h>

#include <cerrno>

namespace memtap {

bool write_all(int fd, const char* data, size_t size, off_t at) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    data += n;
    size -= size_t(n);
    at += n;
  }
  return true;
}

bool read_all(int fd, char* data, size_t size, off_t at) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, data, size, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    size -= size_t(n);
    at += n;
  }
  return true;
}

}  // namespace memtap
