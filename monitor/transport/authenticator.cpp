// See authenticator.h.
#include "monitor/transport/authenticator.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace memtap {

namespace {

std::string text_of(const zmq::message_t& m) {
  return std::string(static_cast<const char*>(m.data()), m.size());
}

std::string z85_of(const std::string& binary_key) {
  char text[41] = {};
  if (binary_key.size() != 32 ||
      !zmq_z85_encode(text, reinterpret_cast<const uint8_t*>(binary_key.data()), 32)) {
    return "(not a CURVE key)";
  }
  return text;
}

// What a handshake refused before ZAP most likely was, for the log.
const char* protocol_error_text(uint32_t code) {
  switch (code) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
      return "a client without CURVE (an agent without MEMTAP_KEYS?)";
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
      return "a client whose monitor.pub is not this monitor's key";
    default:
      return "a malformed handshake";
  }
}

}  // namespace

std::unique_ptr<Authenticator> Authenticator::start(zmq::context_t& ctx, zmq::socket_t& socket,
                                                    const MonitorKeys& keys,
                                                    const std::string& keys_dir,
                                                    std::string* error) {
  std::unique_ptr<Authenticator> a(new Authenticator);
  a->keys_dir_ = keys_dir;
  for (const std::string& key : keys.agents) {
    uint8_t binary[32];
    if (!zmq_z85_decode(binary, key.c_str())) {
      *error = "not a CURVE key: " + key;
      return nullptr;
    }
    a->accepted_.insert(std::string(reinterpret_cast<char*>(binary), sizeof binary));
  }
  char stop_endpoint[64], events_endpoint[64];
  snprintf(stop_endpoint, sizeof stop_endpoint, "inproc://memtap-auth-stop-%p", (void*)a.get());
  snprintf(events_endpoint, sizeof events_endpoint, "inproc://memtap-auth-events-%p",
           (void*)a.get());
  try {
    a->zap_ = zmq::socket_t(ctx, zmq::socket_type::rep);
    a->zap_.set(zmq::sockopt::linger, 0);
    // One handler per context: a second would fail here, never silently share.
    a->zap_.bind("inproc://zeromq.zap.01");
    // NO_DETAIL: the client hung up during the handshake. A client that finds the monitor's
    // mechanism is not its own (CURVE on one side only) may say so first, and the monitor
    // then sees only that.
    if (zmq_socket_monitor(
            socket.handle(), events_endpoint,
            ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0) {
      throw zmq::error_t();
    }
    a->events_ = zmq::socket_t(ctx, zmq::socket_type::pair);
    a->events_.set(zmq::sockopt::linger, 0);
    a->events_.connect(events_endpoint);
    a->stop_ = zmq::socket_t(ctx, zmq::socket_type::pair);
    a->stop_.bind(stop_endpoint);
    a->stop_sender_ = zmq::socket_t(ctx, zmq::socket_type::pair);
    a->stop_sender_.set(zmq::sockopt::linger, 0);
    a->stop_sender_.connect(stop_endpoint);
  } catch (const zmq::error_t& e) {
    *error = std::string("cannot start the CURVE authentication: ") + e.what();
    return nullptr;
  }
  Authenticator* self = a.get();
  a->thread_ = std::thread([self] { self->run(); });
  return a;
}

Authenticator::~Authenticator() {
  if (thread_.joinable()) {
    stop_sender_.send(zmq::str_buffer("stop"), zmq::send_flags::dontwait);
    thread_.join();
  }
}

void Authenticator::run() {
  pthread_setname_np(pthread_self(), "memtap-auth");
  for (;;) {
    zmq::pollitem_t items[] = {{zap_.handle(), 0, ZMQ_POLLIN, 0},
                               {events_.handle(), 0, ZMQ_POLLIN, 0},
                               {stop_.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 3, std::chrono::milliseconds(-1));
      if (items[2].revents & ZMQ_POLLIN) break;
      if (items[0].revents & ZMQ_POLLIN) answer_zap();
      if (items[1].revents & ZMQ_POLLIN) read_handshake_event();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;  // EINTR: a signal for the receiving thread; poll again
    }
  }
  zap_.close();
  events_.close();
  stop_.close();
}

// The ZAP request (rfc.zeromq.org/spec/27): version, request id, domain, address,
// identity, mechanism, then the mechanism's credentials (CURVE: the client's public key).
void Authenticator::answer_zap() {
  std::vector<zmq::message_t> frames;
  for (;;) {
    zmq::message_t frame;
    if (!zap_.recv(frame, zmq::recv_flags::none)) return;
    const bool more = frame.more();
    frames.push_back(std::move(frame));
    if (!more) break;
  }
  const bool well_formed = frames.size() >= 6 && text_of(frames[0]) == "1.0";
  const std::string mechanism = well_formed ? text_of(frames[5]) : "";
  const std::string key = well_formed && frames.size() >= 7 ? text_of(frames[6]) : "";
  const bool accepted = mechanism == "CURVE" && accepted_.count(key) != 0;
  const std::string request_id = frames.size() >= 2 ? text_of(frames[1]) : "";
  const std::string reply[] = {
      "1.0", request_id, accepted ? "200" : "400", accepted ? "OK" : "agent key not accepted",
      "",    ""};
  for (size_t i = 0; i < 6; ++i) {
    zap_.send(zmq::buffer(reply[i]), i + 1 < 6 ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  if (accepted) return;
  refused_.fetch_add(1, std::memory_order_relaxed);
  const std::string address = well_formed ? text_of(frames[3]) : "?";
  if (logged_addresses_.insert(address).second) {
    fprintf(stderr,
            "memtap: refused an agent from %s: its key %s is not one of the agent keys in %s "
            "(further refusals from %s are only counted)\n",
            address.c_str(), z85_of(key).c_str(), keys_dir_.c_str(), address.c_str());
  }
}

void Authenticator::read_handshake_event() {
  zmq::message_t event, address;
  if (!events_.recv(event, zmq::recv_flags::none)) return;
  if (event.more()) (void)events_.recv(address, zmq::recv_flags::none);
  uint16_t id = 0;
  uint32_t value = 0;
  if (event.size() < sizeof id + sizeof value) return;
  memcpy(&id, event.data(), sizeof id);
  memcpy(&value, static_cast<const char*>(event.data()) + sizeof id, sizeof value);
  if (id != ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && id != ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
    return;
  }
  refused_.fetch_add(1, std::memory_order_relaxed);
  // Protocol errors are logged by code; hang-ups (their value is an errno) as one kind.
  const uint32_t kind = id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? value : 0;
  if (logged_kinds_.insert(kind).second) {
    fprintf(stderr, "memtap: refused a connection to %s: %s (further ones are only counted)\n",
            text_of(address).c_str(),
            kind == 0 ? "a client that hung up during the CURVE handshake (an agent without "
                        "MEMTAP_KEYS, or with another monitor's monitor.pub?)"
                      : protocol_error_text(value));
  }
}

}  // namespace memtap
