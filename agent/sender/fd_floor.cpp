// See fd_floor.h. Straight to the kernel, as the namespace's descriptor calls are
// (sender_fds.cpp): no libc lookup from the sender's threads.
#include "agent/sender/fd_floor.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace memtap {

int moved_above_program_fds(int fd) {
  if (fd < 0 || fd >= kSenderFdFloor) return fd;
  const long flags = syscall(SYS_fcntl, fd, F_GETFD);
  if (flags < 0) return fd;
  const int high =
      int(syscall(SYS_fcntl, fd, (flags & FD_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, kSenderFdFloor));
  if (high < 0) return fd;
  syscall(SYS_close, fd);
  return high;
}

}  // namespace memtap
