// The monitor's end of the wire: a bound ZeroMQ PULL socket that any number of agents
// connect to. ZeroMQ's I/O thread reads the socket continuously into an unbounded
// receive queue (RCVHWM 0), so an agent is never slowed by the monitor's processing.
//
// With a key directory the socket is a CURVE server: agents must know its public key and
// hold an accepted key of their own (authenticator.h), and the stream is encrypted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "monitor/transport/authenticator.h"

namespace memtap {

// How a monitor lets agents in (--keys, --insecure).
struct ListenSecurity {
  std::string keys_dir;   // a key directory (memtap keygen): CURVE; "" for none
  bool insecure = false;  // a TCP endpoint beyond loopback without keys, knowingly
};

class PullSocket {
 public:
  // Binds endpoint (checked with check_listen_endpoint). An IPC socket already served by
  // a live monitor is an error, not stolen; a stale one is replaced. Returns nullptr with
  // one line in *error naming the endpoint (or the key file) and the reason. Binding beyond
  // loopback with `insecure` prints a warning to stderr.
  static std::unique_ptr<PullSocket> bind(const std::string& endpoint, std::string* error,
                                          const ListenSecurity& security = {});
  ~PullSocket();

  // Waits up to timeout_ms (0: don't wait) for one message. False on timeout or signal.
  bool receive(zmq::message_t* out, int timeout_ms);

  // Where a received message came from: its connection, as a number that two connections
  // share only by chance (1 in 2^64), even when one took the other's descriptor while the
  // first one's messages still wait here (common/connection_token.h); and ZeroMQ's
  // Peer-Address (the IP over TCP, "localhost:UID:GID:PID" over IPC; "" unknown), which
  // lives as long as the message.
  static uint64_t connection(const zmq::message_t& message);
  static std::string_view peer_address(const zmq::message_t& message);

  const std::string& endpoint() const { return endpoint_; }
  bool curve() const { return authenticator_ != nullptr; }
  // Agent connections refused for their keys (0 without CURVE).
  uint64_t connections_refused() const { return authenticator_ ? authenticator_->refused() : 0; }

 private:
  PullSocket() = default;
  zmq::context_t ctx_;
  zmq::socket_t sock_;
  std::unique_ptr<Authenticator> authenticator_;  // after ctx_: gone before it is closed
  std::string endpoint_;
};

}  // namespace memtap
