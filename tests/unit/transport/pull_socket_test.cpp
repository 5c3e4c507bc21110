// A CURVE monitor socket with agents in the same process: an agent holding the accepted key
// streams, one with a key the monitor never accepted is refused and counted, while another
// thread reads the count (the authenticator answers on a thread of its own). Real sockets;
// also run under TSan by scripts/sanitize.sh.
#include "monitor/transport/pull_socket.h"

#include <gtest/gtest.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <zmq.hpp>

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

}  // namespace
}  // namespace memtap
