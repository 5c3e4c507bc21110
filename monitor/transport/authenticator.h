// Which agents a CURVE monitor accepts. ZeroMQ asks the ZAP handler of the socket's context
// (a REP socket at inproc://zeromq.zap.01) about every client that completed a CURVE hello:
// this one answers on a thread of its own, accepting only the agent public keys of the key
// directory. Clients refused before ZeroMQ asks (no CURVE at all, or a hello sealed for
// another monitor's key, or a hang-up by a client that refused the monitor) are seen
// through the socket's handshake events.
//
// Every refused handshake is counted; each is logged to stderr once per peer address (a
// ZAP refusal) or once per kind (refused before ZAP, where ZeroMQ does not say the peer's
// address). An agent retries the connection on its own, so the count is of refused
// connections, not of distinct agents.
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "monitor/transport/curve_keys.h"

namespace memtap {

class Authenticator {
 public:
  // Binds the ZAP handler in `ctx` and watches `socket`'s handshakes; `socket` must not be
  // bound yet: a CURVE server with no ZAP handler in its context accepts every client key.
  // `keys_dir` is for the messages. nullptr with *error otherwise.
  static std::unique_ptr<Authenticator> start(zmq::context_t& ctx, zmq::socket_t& socket,
                                              const MonitorKeys& keys, const std::string& keys_dir,
                                              std::string* error);
  // Stops the thread and closes its sockets (before the context is closed).
  ~Authenticator();

  // Handshakes refused so far (any thread).
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  Authenticator() = default;
  void run();
  void answer_zap();
  void read_handshake_event();

  std::set<std::string> accepted_;  // agent public keys, 32 bytes each
  std::string keys_dir_;
  zmq::socket_t zap_, events_, stop_, stop_sender_;
  std::set<std::string> logged_addresses_;
  std::set<uint32_t> logged_kinds_;  // protocol error codes; 0 for hang-ups
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

}  // namespace memtap
