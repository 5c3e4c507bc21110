// The order in which the live monitor takes its connections' messages
// (monitor/live/arrival_queue.h).
#include "monitor/live/arrival_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace memtap {
namespace {

zmq::message_t text(const std::string& s) {
  return zmq::message_t(s.data(), s.size());
}

// Pops everything, as "connection:text", telling the queue after each message whether it
// was a Hello still waiting for its first Batch (`awaits`, by connection; none by default).
std::vector<std::string> drain(ArrivalQueue& q, bool (*awaits)(uint64_t) = nullptr) {
  std::vector<std::string> out;
  zmq::message_t m;
  uint64_t connection = 0;
  while (q.pop(&m, &connection)) {
    out.push_back(std::to_string(connection) + ":" + m.to_string());
    q.settle(connection, awaits != nullptr && awaits(connection));
  }
  return out;
}

// Puts one message of each connection through, as their Hellos: from then on they are
// connections the queue has seen.
void open_connections(ArrivalQueue& q, const std::vector<uint64_t>& connections) {
  for (uint64_t c : connections) q.push(c, text("hello"));
  ASSERT_EQ(drain(q).size(), connections.size());
}

TEST(ArrivalQueue, MessagesComeOutInTheOrderTheyArrivedWhateverTheirConnection) {
  ArrivalQueue q;
  open_connections(q, {1, 2, 3});
  q.push(1, text("a"));
  q.push(1, text("b"));
  q.push(2, text("c"));
  q.push(1, text("d"));
  q.push(3, text("e"));
  q.push(2, text("f"));
  EXPECT_EQ(q.messages(), 6u);
  EXPECT_EQ(drain(q), (std::vector<std::string>{"1:a", "1:b", "2:c", "1:d", "3:e", "2:f"}));
  EXPECT_TRUE(q.empty());
}

// A Hello that waits for its first Batch: that connection's next message comes next, ahead
// of what arrived before it (a storm of other Hellos would otherwise push it out).
TEST(ArrivalQueue, TheMessageAfterAWaitingHelloIsTakenNext) {
  ArrivalQueue q;
  q.push(7, text("hello"));
  q.push(8, text("storm1"));
  q.push(9, text("storm2"));
  q.push(7, text("batch"));
  zmq::message_t m;
  uint64_t connection = 0;
  ASSERT_TRUE(q.pop(&m, &connection));
  EXPECT_EQ(connection, 7u);
  q.settle(7, true);
  ASSERT_TRUE(q.pop(&m, &connection));
  EXPECT_EQ(connection, 7u);
  EXPECT_EQ(m.to_string(), "batch");
  q.settle(7, false);
  EXPECT_EQ(drain(q), (std::vector<std::string>{"8:storm1", "9:storm2"}));
}

// The batch has not arrived yet when the Hello is taken: it goes first once it does.
TEST(ArrivalQueue, AWaitingHellosBatchThatArrivesLaterStillGoesFirst) {
  ArrivalQueue q;
  q.push(7, text("hello"));
  zmq::message_t m;
  uint64_t connection = 0;
  ASSERT_TRUE(q.pop(&m, &connection));
  q.settle(7, true);
  q.push(8, text("storm1"));
  q.push(7, text("batch"));
  EXPECT_EQ(drain(q), (std::vector<std::string>{"7:batch", "8:storm1"}));
}

// A connection of nothing but Hellos gets one message out of turn, not a lane of its own.
TEST(ArrivalQueue, AConnectionOfHellosIsTakenOutOfTurnOnlyOnce) {
  ArrivalQueue q;
  q.push(7, text("h1"));
  q.push(8, text("x"));
  q.push(7, text("h2"));
  q.push(7, text("h3"));
  // Every one of 7's a Hello still waiting: h2 out of turn after h1; then h3 waits behind
  // x, which arrived before it.
  EXPECT_EQ(drain(q, [](uint64_t c) { return c == 7; }),
            (std::vector<std::string>{"7:h1", "7:h2", "8:x", "7:h3"}));
}

// A new connection's first message (an agent's Hello) goes ahead of what the connections
// already open sent before it: until its Hello is in, the release does not wait for its
// process, and rows newer than its start were written first.
TEST(ArrivalQueue, ANewConnectionsFirstMessageGoesAheadOfOthersAndItsOwnFollowIt) {
  ArrivalQueue q;
  open_connections(q, {1});
  q.push(1, text("a"));
  q.push(1, text("b"));
  q.push(2, text("hello2"));
  q.push(1, text("c"));
  q.push(2, text("batch2"));
  q.push(3, text("hello3"));
  EXPECT_EQ(drain(q),
            (std::vector<std::string>{"2:hello2", "3:hello3", "1:a", "1:b", "1:c", "2:batch2"}));
  // Seen now: its next message waits its turn.
  q.push(1, text("d"));
  q.push(2, text("e"));
  EXPECT_EQ(drain(q), (std::vector<std::string>{"1:d", "2:e"}));
}

// A storm of new connections does not come between a waiting Hello and its Batch.
TEST(ArrivalQueue, AWaitingHellosBatchGoesBeforeNewConnectionsFirstMessages) {
  ArrivalQueue q;
  q.push(7, text("hello"));
  q.push(8, text("storm1"));
  q.push(9, text("storm2"));
  q.push(7, text("batch"));
  q.push(10, text("storm3"));
  EXPECT_EQ(drain(q, [](uint64_t c) { return c == 7; }),
            (std::vector<std::string>{"7:hello", "7:batch", "8:storm1", "9:storm2", "10:storm3"}));
}

TEST(ArrivalQueue, IsFullAtItsBoundInBytes) {
  ArrivalQueue q;
  const size_t piece = ArrivalQueue::kMaxBytes / 4;
  for (int i = 0; i < 3; ++i) q.push(1, zmq::message_t(piece));
  EXPECT_FALSE(q.full());
  q.push(2, zmq::message_t(piece));
  EXPECT_TRUE(q.full());
  zmq::message_t m;
  uint64_t connection = 0;
  ASSERT_TRUE(q.pop(&m, &connection));
  EXPECT_FALSE(q.full());
}

}  // namespace
}  // namespace memtap
