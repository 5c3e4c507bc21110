// What tells one agent connection from another at the monitor. ZeroMQ names a message's
// connection only by its descriptor (ZMQ_SRCFD), which the kernel hands to the next
// connection once one closes, while the closed one's messages may still wait in the
// monitor's queue: a sender that sent thousands of Hellos and left, and an agent that
// connected after it on the same descriptor, looked like one connection, and the bound on
// Hellos waiting per connection (monitor/engine/session.h) dropped the agent's. Each agent
// socket therefore says a random token in its handshake (ZeroMQ connection metadata), which
// the monitor reads with every message (PullSocket::connection).
#pragma once

#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace memtap {

// The property's name as zmq_msg_gets reads it (ZeroMQ requires the "X-" of user metadata).
inline constexpr const char* kConnectionTokenProperty = "X-Memtap-Connection";

// ZMQ_METADATA: a draft option in libzmq 4.3 (Debian builds it), so not in zmq.h unless
// ZMQ_BUILD_DRAFT_API is defined.
inline constexpr int kZmqMetadataOption = 95;

// Gives `socket`, before it connects, a fresh random token. False where this libzmq refuses
// the option: its connections are then told apart by descriptor and Peer-Address only, as
// any sender's that sets no token.
inline bool set_connection_token(void* socket) {
  uint64_t token = 0;
  if (getrandom(&token, sizeof token, GRND_NONBLOCK) != ssize_t(sizeof token)) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    token = (uint64_t(now.tv_sec) * 1000000000u + uint64_t(now.tv_nsec)) * 6364136223846793005ull +
            uint64_t(getpid());
  }
  char text[64];
  snprintf(text, sizeof text, "%s:%016" PRIx64, kConnectionTokenProperty, token);
  return zmq_setsockopt(socket, kZmqMetadataOption, text, strlen(text)) == 0;
}

}  // namespace memtap
