// The monitor's end of the wire: a bound ZeroMQ PULL socket that any number of agents
// connect to. ZeroMQ's I/O thread reads the socket continuously into an unbounded
// receive queue (RCVHWM 0), so an agent is never slowed by the monitor's processing.
#pragma once

#include <memory>
#include <string>
#include <zmq.hpp>

namespace memtap {

class PullSocket {
 public:
  // Binds endpoint (checked with check_listen_endpoint). An IPC socket already served by
  // a live monitor is an error, not stolen; a stale one is replaced. Returns nullptr with
  // one line in *error naming the endpoint and the reason.
  static std::unique_ptr<PullSocket> bind(const std::string& endpoint, std::string* error);
  ~PullSocket();

  // Waits up to timeout_ms (0: don't wait) for one message. False on timeout or signal.
  bool receive(zmq::message_t* out, int timeout_ms);

  const std::string& endpoint() const { return endpoint_; }

 private:
  PullSocket() = default;
  zmq::context_t ctx_;
  zmq::socket_t sock_;
  std::string endpoint_;
};

}  // namespace memtap
