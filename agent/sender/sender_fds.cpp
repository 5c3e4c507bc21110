// The descriptors the sender's namespace opens and closes: moved above the program's
// (fd_floor.h), and marked in the agent's SenderFds (sender_api.h) for its close(), dup2 and
// dup3 hooks. libmemtap_sender.so comes first in its namespace's lookup scope, so these are
// the socket, eventfd, epoll_create, pipe and close that libzmq calls there; the program's own
// calls never come here (they bind to its libc, or to the agent's hooks). What the
// namespace's libc opens inside itself (a resolver's socket) does not pass through them, and
// is closed before the call that opened it returns.
#include "agent/sender/sender_fds.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "agent/sender/fd_floor.h"

namespace memtap {
namespace {

// Set once, before the sender opens anything (memtap_sender_start); the namespace's
// process-wide state, as the functions below are free functions of its libc's interface.
SenderFds* g_marks = nullptr;

int marked(int fd) {
  fd = moved_above_program_fds(fd);
  if (fd >= 0 && g_marks) g_marks->set(fd, true);
  return fd;
}

int marked_pair(int rc, int fds[2]) {
  if (rc == 0) {
    fds[0] = marked(fds[0]);
    fds[1] = marked(fds[1]);
  }
  return rc;
}

}  // namespace

void mark_sender_fds_in(SenderFds* marks) {
  g_marks = marks;
}

}  // namespace memtap

using memtap::marked;
using memtap::marked_pair;

#define MEMTAP_NAMESPACE_CALL extern "C" __attribute__((visibility("default")))

// Straight to the kernel, as glibc's own do (less their cancellation points, which ZeroMQ
// never uses): looking the libc functions up (dlsym) would take the loader's lock from
// the sender's threads, which the program's libc, believing its process single-threaded,
// releases without waking a waiter (a hang at exit under load, seen).
MEMTAP_NAMESPACE_CALL int socket(int domain, int type, int protocol) {
  return marked(int(syscall(SYS_socket, domain, type, protocol)));
}

MEMTAP_NAMESPACE_CALL int socketpair(int domain, int type, int protocol, int fds[2]) {
  return marked_pair(int(syscall(SYS_socketpair, domain, type, protocol, fds)), fds);
}

MEMTAP_NAMESPACE_CALL int accept(int fd, sockaddr* addr, socklen_t* len) {
  return marked(int(syscall(SYS_accept4, fd, addr, len, 0)));
}

MEMTAP_NAMESPACE_CALL int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  return marked(int(syscall(SYS_accept4, fd, addr, len, flags)));
}

MEMTAP_NAMESPACE_CALL int eventfd(unsigned int initval, int flags) {
  return marked(int(syscall(SYS_eventfd2, initval, flags)));
}

MEMTAP_NAMESPACE_CALL int epoll_create(int size) {
  if (size <= 0) return errno = EINVAL, -1;
  return marked(int(syscall(SYS_epoll_create1, 0)));
}

MEMTAP_NAMESPACE_CALL int epoll_create1(int flags) {
  return marked(int(syscall(SYS_epoll_create1, flags)));
}

MEMTAP_NAMESPACE_CALL int pipe(int fds[2]) {
  return marked_pair(int(syscall(SYS_pipe2, fds, 0)), fds);
}

MEMTAP_NAMESPACE_CALL int pipe2(int fds[2], int flags) {
  return marked_pair(int(syscall(SYS_pipe2, fds, flags)), fds);
}

MEMTAP_NAMESPACE_CALL int close(int fd) {
  // Unmarked first: once closed, the number may be the program's at once.
  if (memtap::g_marks) memtap::g_marks->set(fd, false);
  return int(syscall(SYS_close, fd));
}
