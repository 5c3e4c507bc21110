// Marks the descriptors the sender's namespace holds in the agent's SenderFds (sender_api.h).
#pragma once

#include "agent/sender/sender_api.h"

namespace memtap {

// From now on the namespace's socket, eventfd, epoll_create, pipe and accept calls set
// their descriptors' bits in `marks`, and close clears them. nullptr: marks nothing.
void mark_sender_fds_in(SenderFds* marks);

}  // namespace memtap
