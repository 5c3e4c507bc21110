// The live monitor's messages, read ahead from the PULL socket and handed to the engine in
// the order they arrived, so that the processes stay level in time: what a process sent at
// the same moment as another is read at the same moment.
//
// Why not ZeroMQ's own order: a PULL socket takes one message from each connection in
// turn. A monitor behind the live rate (beside four busy loops and another training job its
// receive queue held 12-18 s of the ranks' events) then moves a process whose messages each
// cover little of its time (an idle launcher's heartbeats, a rank that keeps up and sends a
// batch every 2 ms cycle) slower through its time than one whose messages cover much (a
// rank sending full 65,536-event batches). The first fell more than the stall limit behind
// the second, the release stopped waiting for it, and its rows came late. In the order of
// arrival a process lags the others only by what its own agent lags, which is what the
// stall rule is for. Reading ahead holds nothing more than before: ZeroMQ held the same
// messages (RCVHWM 0).
//
// Bounds. At most kMaxBytes wait here; beyond that the rest waits in ZeroMQ and comes in
// its turns, so a flood from one connection delays the others by at most that much (a few
// seconds of the engine's work), and then only takes its turn with them. And a Hello that
// waits for its first Batch (SessionLimits::max_pending) has that connection's next message
// taken next, ahead of its place: a storm of Hellos from other connections that arrived
// between the two does not push it out.
//
// A new connection's first message (an agent's Hello) is taken ahead of what other
// connections sent before it, after any waiting Hello's Batch. Until a process's Hello is
// in, nothing holds the release back for it but the horizon (Session::set_horizon, a
// quarter of a second behind the wall clock): a Hello that queued behind seconds of other
// processes' batches came after their rows, newer than its start, had been written, and its
// START_TRACE and first rows were out of time order (beside two busy loops, six programs
// and their children recorded at once). ZeroMQ's turns had taken it within a round.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <zmq.hpp>

namespace memtap {

class ArrivalQueue {
 public:
  // Read-ahead stops at this much (a flood's head start over the other connections).
  static constexpr size_t kMaxBytes = size_t{256} << 20;
  static constexpr size_t kMaxMessages = size_t{1} << 20;

  bool full() const { return bytes_ >= kMaxBytes || messages_ >= kMaxMessages; }
  bool empty() const { return messages_ == 0; }
  size_t messages() const { return messages_; }

  void push(uint64_t connection, zmq::message_t message);
  // The next message for the engine, and its connection; false when none waits.
  bool pop(zmq::message_t* message, uint64_t* connection);
  // What the engine made of the message pop() last gave: a Hello that waits for its first
  // Batch (IngestResult::awaits_first_batch) has its connection's next message taken next,
  // once (a connection whose every message is a Hello gets no more than that).
  void settle(uint64_t connection, bool awaits_first_batch);

 private:
  struct Entry {
    uint64_t connection = 0;
    zmq::message_t message;
    bool taken = false;  // taken out of turn (a Hello's Batch); skipped at the front
  };
  void take(Entry& entry, zmq::message_t* message, uint64_t* connection);
  void take_first(zmq::message_t* message, uint64_t* connection);
  void count_out(uint64_t connection, size_t bytes);

  std::deque<Entry> entries_;
  // New connections' first messages, in the order they arrived; never in entries_, which
  // holds only what came after them.
  std::deque<Entry> firsts_;
  // Connections that have had a first message. Forgotten all at once past kMaxSeen (a
  // spawn-heavy run opens one per process): a connection forgotten with nothing waiting
  // then has one message taken early, which changes no connection's own order.
  static constexpr size_t kMaxSeen = size_t{1} << 16;
  std::unordered_set<uint64_t> seen_;
  std::unordered_map<uint64_t, size_t> waiting_;  // messages waiting, by connection
  // Connections whose next message goes next; at most a few (agents starting together).
  static constexpr size_t kMaxFollowed = 64;
  std::deque<uint64_t> followed_;
  bool last_out_of_turn_ = false;  // pop() last took a followed connection's message
  size_t messages_ = 0;
  size_t bytes_ = 0;
};

}  // namespace memtap
