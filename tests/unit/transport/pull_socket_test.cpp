// A CURVE monitor socket with agents in the same process: an agent holding the accepted key
// streams, one with a key the monitor never accepted is refused and counted, while another
// thread reads the count (the authenticator answers on a thread of its own). Real sockets;
// also run under TSan by scripts/sanitize.sh. And which connection a message came from,
// when a connection took the descriptor of one whose messages still wait.
#include "monitor/transport/pull_socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/connection_token.h"
#include "common/curve_keys.h"
#include "monitor/transport/curve_keys.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

using test::TempDir;

std::string key(const std::string& file, bool secret) {
  std::string k, error;
  EXPECT_TRUE(read_key_file(file, secret, &k, &error)) << error;
  return k;
}

// A PUSH socket that is a CURVE client of `server_public` with the given key pair.
zmq::socket_t curve_client(zmq::context_t& ctx, const std::string& endpoint,
                           const std::string& server_public, const std::string& pub,
                           const std::string& secret) {
  zmq::socket_t s(ctx, zmq::socket_type::push);
  s.set(zmq::sockopt::curve_serverkey, server_public);
  s.set(zmq::sockopt::curve_publickey, pub);
  s.set(zmq::sockopt::curve_secretkey, secret);
  s.set(zmq::sockopt::linger, 0);
  s.connect(endpoint);
  return s;
}

TEST(PullSocket, CurveLetsTheAcceptedAgentInAndCountsTheOthers) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string keys = dir.file("keys");
  std::string error;
  ASSERT_TRUE(write_key_directory(keys, &error)) << error;
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  std::unique_ptr<PullSocket> pull = PullSocket::bind(endpoint, &error, {keys, false});
  ASSERT_TRUE(pull) << error;
  ASSERT_TRUE(pull->curve());

  const std::string server_public = key(keys + "/" + kMonitorPublicKeyFile, false);
  zmq::context_t ctx;
  zmq::socket_t good =
      curve_client(ctx, endpoint, server_public, key(keys + "/" + kAgentPublicKeyFile, false),
                   key(keys + "/" + kAgentSecretKeyFile, true));
  char stranger_public[41], stranger_secret[41];
  ASSERT_EQ(zmq_curve_keypair(stranger_public, stranger_secret), 0);
  zmq::socket_t stranger =
      curve_client(ctx, endpoint, server_public, stranger_public, stranger_secret);

  // Another thread reads the count while the authenticator's thread updates it.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> seen{0};
  std::thread reader([&] {
    while (!stop.load()) seen.store(pull->connections_refused());
  });

  constexpr int kMessages = 100;
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_TRUE(good.send(zmq::buffer("good " + std::to_string(i)), zmq::send_flags::none));
    (void)stranger.send(zmq::buffer(std::string("stranger")), zmq::send_flags::dontwait);
  }
  int received = 0;
  zmq::message_t msg;
  while (received < kMessages && pull->receive(&msg, 10000)) {
    ASSERT_EQ(msg.to_string(), "good " + std::to_string(received));
    ++received;
  }
  EXPECT_EQ(received, kMessages);
  // The stranger retries on its own; its first refusal is enough.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (pull->connections_refused() == 0 && std::chrono::steady_clock::now() < deadline) {
    pull->receive(&msg, 10);
  }
  stop.store(true);
  reader.join();
  EXPECT_GE(pull->connections_refused(), 1u);
  EXPECT_FALSE(pull->receive(&msg, 0)) << "nothing from the stranger got through";
}

// A sender in a child process of its own, so that its descriptors are not this process's:
// connects to `endpoint` (with the agents' token when `token`), sends `messages`, and exits
// once ZeroMQ has written them.
pid_t send_from_child(const std::string& endpoint, bool token,
                      const std::vector<std::string>& messages) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  void* ctx = zmq_ctx_new();
  void* push = zmq_socket(ctx, ZMQ_PUSH);
  int linger = 10000;
  zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
  bool ok = !token || set_connection_token(push);
  ok = ok && zmq_connect(push, endpoint.c_str()) == 0;
  for (const std::string& m : messages) ok = ok && zmq_send(push, m.data(), m.size(), 0) >= 0;
  zmq_close(push);
  zmq_ctx_term(ctx);  // waits until the messages are written
  _exit(ok ? 0 : 1);
}

bool child_succeeded(pid_t pid) {
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

int source_fd(const zmq::message_t& m) {
  return zmq_msg_get(const_cast<zmq_msg_t*>(m.handle()), ZMQ_SRCFD);
}

// The kernel gives a closed connection's descriptor to the next one while the first one's
// messages still wait in the queue. Over TCP both have the same Peer-Address (the host), so
// only the agent's token tells the agent's messages from those of the sender before it.
TEST(PullSocket, AConnectionOnAReusedDescriptorIsANewConnection) {
  std::string error;
  std::unique_ptr<PullSocket> pull = PullSocket::bind("tcp://127.0.0.1:*", &error);
  ASSERT_TRUE(pull) << error;
  bool reused = false;
  for (int round = 0; round < 5 && !reused; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // The first sender: many messages, then gone.
    const std::vector<std::string> storm(50, "storm");
    ASSERT_TRUE(child_succeeded(send_from_child(pull->endpoint(), false, storm)));
    zmq::message_t msg;
    ASSERT_TRUE(pull->receive(&msg, 10000));
    ASSERT_EQ(msg.to_string(), "storm");
    const int fd = source_fd(msg);
    const uint64_t storm_connection = PullSocket::connection(msg);
    // Its descriptor is free once ZeroMQ has seen the end of the connection.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (fcntl(fd, F_GETFD) != -1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_EQ(fcntl(fd, F_GETFD), -1) << "the first sender's connection never ended here";
    // The agent, connecting next.
    ASSERT_TRUE(child_succeeded(send_from_child(pull->endpoint(), true, {"agent"})));
    size_t storm_left = storm.size() - 1;
    bool agent_seen = false;
    while ((storm_left > 0 || !agent_seen) && pull->receive(&msg, 10000)) {
      if (msg.to_string() == "storm") {
        --storm_left;
        EXPECT_EQ(PullSocket::connection(msg), storm_connection);
        continue;
      }
      agent_seen = true;
      reused = source_fd(msg) == fd;
      EXPECT_NE(PullSocket::connection(msg), storm_connection)
          << "descriptor " << source_fd(msg) << " after " << fd;
    }
    ASSERT_TRUE(agent_seen && storm_left == 0) << "messages were lost";
  }
  // Descriptors are the lowest free one; another may have been free below it.
  EXPECT_TRUE(reused) << "the agent's connection never took the descriptor before it";
}

}  // namespace
}  // namespace memtap
