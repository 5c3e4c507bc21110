// Positioned reads and writes that go on until done: pwrite/pread may move fewer bytes than
// asked (a signal, a full disk). For the spools, which write a file at their end and read it
// back from where they are.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace memtap {

// False with errno set when the disk refuses (ENOSPC when it took nothing more).
bool write_all(int fd, const char* data, size_t size, off_t at);
// False with errno set; EIO when the file ends first (shorter than what was written there).
bool read_all(int fd, char* data, size_t size, off_t at);

}  // namespace memtap
