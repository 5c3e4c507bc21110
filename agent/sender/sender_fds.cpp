// The descriptors the sender's namespace opens and closes, marked in the agent's SenderFds
// (sender_api.h) for its close() hook. libmemtap_sender.so comes first in its namespace's
// lookup scope, so these are the socket, eventfd, epoll_create, pipe and close that libzmq
// calls there; the program's own calls never come here (they bind to its libc, or to the
// agent's hooks). What the namespace's libc opens inside itself (a resolver's socket) does
// not pass through them, and is closed before the call that opened it returns.
#include "agent/sender/sender_fds.h"

#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace memtap {
namespace {

// Set once, before the sender opens anything (memtap_sender_start); the namespace's
// process-wide state, as the functions below are free functions of its libc's interface.
SenderFds* g_marks = nullptr;

template <typename Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

int marked(int fd) {
  if (fd >= 0 && g_marks) g_marks->set(fd, true);
  return fd;
}

int marked_pair(int rc, const int fds[2]) {
  if (rc == 0) {
    marked(fds[0]);
    marked(fds[1]);
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
using memtap::next;

#define MEMTAP_NAMESPACE_CALL extern "C" __attribute__((visibility("default")))

MEMTAP_NAMESPACE_CALL int socket(int domain, int type, int protocol) {
  static const auto real = next<int (*)(int, int, int)>("socket");
  if (!real) return errno = ENOSYS, -1;
  return marked(real(domain, type, protocol));
}

MEMTAP_NAMESPACE_CALL int socketpair(int domain, int type, int protocol, int fds[2]) {
  static const auto real = next<int (*)(int, int, int, int*)>("socketpair");
  if (!real) return errno = ENOSYS, -1;
  return marked_pair(real(domain, type, protocol, fds), fds);
}

MEMTAP_NAMESPACE_CALL int accept(int fd, sockaddr* addr, socklen_t* len) {
  static const auto real = next<int (*)(int, sockaddr*, socklen_t*)>("accept");
  if (!real) return errno = ENOSYS, -1;
  return marked(real(fd, addr, len));
}

MEMTAP_NAMESPACE_CALL int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  static const auto real = next<int (*)(int, sockaddr*, socklen_t*, int)>("accept4");
  if (!real) return errno = ENOSYS, -1;
  return marked(real(fd, addr, len, flags));
}

MEMTAP_NAMESPACE_CALL int eventfd(unsigned int initval, int flags) {
  static const auto real = next<int (*)(unsigned int, int)>("eventfd");
  if (!real) return errno = ENOSYS, -1;
  return marked(real(initval, flags));
}

MEMTAP_NAMESPACE_CALL int epoll_create(int size) {
  static const auto real = next<int (*)(int)>("epoll_create");
  if (!real) return errno = ENOSYS, -1;
  return marked(real(size));
}

MEMTAP_NAMESPACE_CALL int epoll_create1(int flags) {
  static const auto real = next<int (*)(int)>("epoll_create1");
  if (!real) return errno = ENOSYS, -1;
  return marked(real(flags));
}

MEMTAP_NAMESPACE_CALL int pipe(int fds[2]) {
  static const auto real = next<int (*)(int*)>("pipe");
  if (!real) return errno = ENOSYS, -1;
  return marked_pair(real(fds), fds);
}

MEMTAP_NAMESPACE_CALL int pipe2(int fds[2], int flags) {
  static const auto real = next<int (*)(int*, int)>("pipe2");
  if (!real) return errno = ENOSYS, -1;
  return marked_pair(real(fds, flags), fds);
}

MEMTAP_NAMESPACE_CALL int close(int fd) {
  static const auto real = next<int (*)(int)>("close");
  // Unmarked first: once closed, the number may be the program's at once.
  if (memtap::g_marks) memtap::g_marks->set(fd, false);
  if (!real) return errno = ENOSYS, -1;
  return real(fd);
}
