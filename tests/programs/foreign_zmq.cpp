// memtap_test_foreign_zmq: an application that uses ZeroMQ itself.
//
// The agent keeps its own ZeroMQ out of the application's symbol scope (docs/design-notes.md,
// agent "Never break the host").
// This program links the system libzmq directly, creates its own context and does an inproc
// PUSH/PULL round trip, so a test can run it under the agent and check that neither copy
// disturbs the other: the messages arrive intact, and the program's own allocations (a
// distinct size) are still recorded.
//
// Prints "foreign_zmq ok" and exits 0; on any failure prints what failed and exits 1.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <zmq.hpp>

namespace {

constexpr int kMessages = 1000;
constexpr size_t kBlockBytes = 31337;  // recorded as MALLOC/FREE rows of this size
constexpr int kBlocks = 10;

void* volatile sink;  // keeps the compiler from removing the malloc/free pairs

bool round_trip(std::string* error) {
  zmq::context_t context(1);
  zmq::socket_t pull(context, zmq::socket_type::pull);
  zmq::socket_t push(context, zmq::socket_type::push);
  pull.bind("inproc://memtap-foreign-zmq");
  push.connect("inproc://memtap-foreign-zmq");

  for (int i = 0; i < kMessages; i++) {
    std::string text = "message " + std::to_string(i);
    push.send(zmq::buffer(text), zmq::send_flags::none);
  }
  for (int i = 0; i < kMessages; i++) {
    zmq::message_t message;
    if (!pull.recv(message, zmq::recv_flags::none)) {
      *error = "recv " + std::to_string(i) + " returned nothing";
      return false;
    }
    std::string expected = "message " + std::to_string(i);
    if (message.to_string() != expected) {
      *error = "message " + std::to_string(i) + ": got '" + message.to_string() + "'";
      return false;
    }
  }
  return true;
}

}  // namespace

int main() {
  std::string error;
  try {
    if (!round_trip(&error)) {
      std::fprintf(stderr, "foreign_zmq: %s\n", error.c_str());
      return 1;
    }
  } catch (const zmq::error_t& e) {
    std::fprintf(stderr, "foreign_zmq: zmq error: %s\n", e.what());
    return 1;
  }

  for (int i = 0; i < kBlocks; i++) {
    void* p = std::malloc(kBlockBytes);
    if (!p) {
      std::fprintf(stderr, "foreign_zmq: malloc(%zu) failed\n", kBlockBytes);
      return 1;
    }
    std::memset(p, i, kBlockBytes);
    sink = p;
    std::free(p);
  }

  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  std::printf("libzmq %d.%d.%d: %d messages, %d blocks of %zu bytes\n", major, minor, patch,
              kMessages, kBlocks, kBlockBytes);
  std::printf("foreign_zmq ok\n");
  return 0;
}
