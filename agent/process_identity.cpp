// Reading pid, host, command line and rank with syscalls and getenv only.
#include "agent/process_identity.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/utsname.h>

#include <cstdlib>
#include <cstring>

#include "agent/raw_syscalls.h"
#include "common/clock.h"

namespace memtap {

namespace {

// The first of the launchers' variables that is set: torchrun, Open MPI, PMI, Slurm.
int32_t env_int(const char* const* names) {
  for (; *names; ++names) {
    const char* v = getenv(*names);
    if (v && *v) return int32_t(strtol(v, nullptr, 10));
  }
  return -1;
}

}  // namespace

void read_process_identity(ProcessIdentity* id) {
  id->pid = raw_getpid();
  id->ppid = uint32_t(syscall(SYS_getppid));
  uint64_t random[2];
  if (getrandom(random, sizeof random, GRND_NONBLOCK) == sizeof random) {
    id->instance_id = random[0];
    id->instance_secret = random[1];
  } else {
    // Only before the kernel's pool is ready (early boot): unique, but guessable, so a sender
    // that tries hard enough could pass for this instance (see wire.capnp's instanceSecret).
    id->instance_id = monotonic_ns() * 6364136223846793005ull + id->pid;
    id->instance_secret =
        (monotonic_ns() ^ reinterpret_cast<uintptr_t>(&random)) * 0x9e3779b97f4a7c15ull;
  }
  struct utsname u;
  id->hostname[0] = 0;
  if (uname(&u) == 0) {
    strncpy(id->hostname, u.nodename, sizeof id->hostname - 1);
    id->hostname[sizeof id->hostname - 1] = 0;
  }
  id->cmdline_len = 0;
  int fd = int(syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC));
  if (fd >= 0) {
    for (;;) {
      long n = syscall(SYS_read, fd, id->cmdline + id->cmdline_len,
                       sizeof id->cmdline - id->cmdline_len);
      if (n <= 0) break;
      id->cmdline_len += size_t(n);
      if (id->cmdline_len == sizeof id->cmdline) break;
    }
    syscall(SYS_close, fd);
  }
  static const char* const kRank[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                      nullptr};
  static const char* const kWorld[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                       "SLURM_NTASKS", nullptr};
  id->rank = env_int(kRank);
  id->world_size = env_int(kWorld);
}

}  // namespace memtap
