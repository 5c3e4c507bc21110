// See pull_socket.h.
#include "monitor/transport/pull_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/connection_token.h"
#include "common/endpoint.h"

namespace memtap {

namespace {

// True when something accepts connections on the Unix socket at path.
bool unix_socket_in_use(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  bool in_use = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return in_use;
}

}  // namespace

std::unique_ptr<PullSocket> PullSocket::bind(const std::string& endpoint, std::string* error,
                                             const ListenSecurity& security) {
  const bool curve = !security.keys_dir.empty();
  std::string problem = check_listen_endpoint(endpoint, curve, security.insecure);
  if (!problem.empty()) {
    *error = problem;
    return nullptr;
  }
  MonitorKeys keys;
  if (curve && !zmq_has("curve")) {
    *error = "--keys: this ZeroMQ library was built without CURVE (libsodium)";
    return nullptr;
  }
  if (curve && !load_monitor_keys(security.keys_dir, &keys, error)) return nullptr;
  std::string path = ipc_path(endpoint);
  if (!path.empty() && unix_socket_in_use(path)) {
    *error = "endpoint '" + endpoint + "' is already in use by another monitor";
    return nullptr;
  }
  std::unique_ptr<PullSocket> s(new PullSocket);
  try {
    s->sock_ = zmq::socket_t(s->ctx_, zmq::socket_type::pull);
    s->sock_.set(zmq::sockopt::rcvhwm, 0);
    s->sock_.set(zmq::sockopt::linger, 0);
    // Messages are bounded by what an agent sends in one batch; refuse anything absurd.
    s->sock_.set(zmq::sockopt::maxmsgsize, int64_t(256) << 20);
    if (curve) {
      const int server = 1;
      zmq_setsockopt(s->sock_.handle(), ZMQ_CURVE_SERVER, &server, sizeof server);
      zmq_setsockopt(s->sock_.handle(), ZMQ_CURVE_SECRETKEY, keys.secret.c_str(),
                     keys.secret.size());
      s->authenticator_ = Authenticator::start(s->ctx_, s->sock_, keys, security.keys_dir, error);
      if (!s->authenticator_) return nullptr;
    }
    s->sock_.bind(endpoint);
  } catch (const zmq::error_t& e) {
    *error = "cannot listen on '" + endpoint + "': " + e.what();
    return nullptr;
  }
  // The directory is already private; the socket itself is made user-only too, for
  // endpoints the user placed elsewhere.
  if (!path.empty()) chmod(path.c_str(), 0600);
  // tcp://HOST:* binds a free port: the endpoint then names the one chosen.
  s->endpoint_ = path.empty() ? s->sock_.get(zmq::sockopt::last_endpoint) : endpoint;
  if (!curve && !is_loopback_endpoint(endpoint) && path.empty()) {
    fprintf(stderr,
            "memtap: WARNING: listening on %s without authentication or encryption "
            "(--insecure): anyone who can reach it can send events, and they travel in clear "
            "text\n",
            s->endpoint_.c_str());
  }
  return s;
}

PullSocket::~PullSocket() {
  std::string path = ipc_path(endpoint_);
  if (authenticator_) zmq_socket_monitor(sock_.handle(), nullptr, 0);
  sock_.close();
  authenticator_.reset();
  if (!path.empty()) unlink(path.c_str());
}

// zmq_msg_get and zmq_msg_gets only read the message's metadata; they take no const handle.
uint64_t PullSocket::connection(const zmq::message_t& message) {
  zmq_msg_t* m = const_cast<zmq_msg_t*>(message.handle());
  // FNV-1a over the descriptor, the Peer-Address and the agent's token: the descriptor
  // alone is reused (common/connection_token.h); over IPC the address names the peer's pid,
  // over TCP only its host, hence the token.
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](const void* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      hash = (hash ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
    }
  };
  const int fd = zmq_msg_get(m, ZMQ_SRCFD);
  mix(&fd, sizeof fd);
  for (const char* property : {"Peer-Address", kConnectionTokenProperty}) {
    const char* value = zmq_msg_gets(m, property);
    const std::string_view text = value ? value : "";
    mix(text.data(), text.size());
    mix("", 1);  // a separator: "ab"+"c" is not "a"+"bc"
  }
  return hash;
}

std::string_view PullSocket::peer_address(const zmq::message_t& message) {
  const char* address = zmq_msg_gets(const_cast<zmq_msg_t*>(message.handle()), "Peer-Address");
  return address ? address : "";
}

bool PullSocket::receive(zmq::message_t* out, int timeout_ms) {
  try {
    if (timeout_ms != 0) {
      zmq::pollitem_t item{sock_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) <= 0) return false;
    }
    return sock_.recv(*out, zmq::recv_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;  // EINTR: a signal; the caller checks its flags and comes back
  }
}

}  // namespace memtap
