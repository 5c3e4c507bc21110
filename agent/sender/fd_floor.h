// Where the sender's namespace keeps its descriptors (fd_floor.cpp): above the numbers
// programs name.
#pragma once

namespace memtap {

// Where the namespace's descriptors live: at kSenderFdFloor or above, not at the lowest free
// numbers. Programs name low descriptors by number: a shell's `exec 3>log` is dup2(fd, 3), and
// replaced that way, ZeroMQ's eventfd aborted the process ("Bad file descriptor
// (src/signaler.cpp)") and the memory sampler read the program's file. The program also gets
// the numbers it would get without memtap.
constexpr int kSenderFdFloor = 100;

// `fd` moved to the lowest free number at or above kSenderFdFloor (its close-on-exec flag
// kept; the old number closed), or `fd` itself where it is there already or cannot be moved
// (a descriptor limit at or below the floor).
int moved_above_program_fds(int fd);

}  // namespace memtap
