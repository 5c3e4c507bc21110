// See arrival_queue.h.
#include "monitor/live/arrival_queue.h"

#include <algorithm>
#include <utility>

namespace memtap {

void ArrivalQueue::push(uint64_t connection, zmq::message_t message) {
  bytes_ += message.size();
  ++messages_;
  const bool first = waiting_.count(connection) == 0 && seen_.count(connection) == 0;
  ++waiting_[connection];
  if (!first) {
    entries_.push_back(Entry{connection, std::move(message), false});
    return;
  }
  if (seen_.size() >= kMaxSeen) seen_.clear();
  seen_.insert(connection);
  firsts_.push_back(Entry{connection, std::move(message), false});
}

void ArrivalQueue::count_out(uint64_t connection, size_t bytes) {
  bytes_ -= bytes;
  --messages_;
  if (--waiting_[connection] == 0) waiting_.erase(connection);
}

void ArrivalQueue::take(Entry& entry, zmq::message_t* message, uint64_t* connection) {
  *connection = entry.connection;
  *message = std::move(entry.message);
  entry.taken = true;
  count_out(entry.connection, message->size());
  while (!entries_.empty() && entries_.front().taken) entries_.pop_front();
}

void ArrivalQueue::take_first(zmq::message_t* message, uint64_t* connection) {
  *connection = firsts_.front().connection;
  *message = std::move(firsts_.front().message);
  firsts_.pop_front();
  count_out(*connection, message->size());
}

bool ArrivalQueue::pop(zmq::message_t* message, uint64_t* connection) {
  if (messages_ == 0) return false;
  // A followed connection with a message waiting: its first one, wherever it is.
  auto f = std::find_if(followed_.begin(), followed_.end(),
                        [this](uint64_t c) { return waiting_.count(c) != 0; });
  if (f != followed_.end()) {
    const uint64_t wanted = *f;
    followed_.erase(f);
    for (Entry& entry : entries_) {
      if (!entry.taken && entry.connection == wanted) {
        take(entry, message, connection);
        last_out_of_turn_ = true;
        return true;
      }
    }
  }
  // Then a new connection's first message, ahead of its place; a Hello's Batch went before
  // it, so a storm of new connections does not push a waiting Hello out.
  last_out_of_turn_ = false;
  if (!firsts_.empty()) {
    take_first(message, connection);
    return true;
  }
  take(entries_.front(), message, connection);
  return true;
}

void ArrivalQueue::settle(uint64_t connection, bool awaits_first_batch) {
  // Taken out of turn already: a second Hello in a row waits its turn like anything else.
  if (!awaits_first_batch || last_out_of_turn_) return;
  if (std::find(followed_.begin(), followed_.end(), connection) != followed_.end()) return;
  if (followed_.size() >= kMaxFollowed) followed_.pop_front();
  followed_.push_back(connection);
}

}  // namespace memtap
