// See arrival_queue.h.
#include "monitor/live/arrival_queue.h"

#include <algorithm>
#include <utility>

namespace memtap {

void ArrivalQueue::push(uint64_t connection, zmq::message_t message) {
  bytes_ += message.size();
  ++messages_;
  ++waiting_[connection];
  entries_.push_back(Entry{connection, std::move(message), false});
}

void ArrivalQueue::take(Entry& entry, zmq::message_t* message, uint64_t* connection) {
  *connection = entry.connection;
  *message = std::move(entry.message);
  entry.taken = true;
  bytes_ -= message->size();
  --messages_;
  if (--waiting_[entry.connection] == 0) waiting_.erase(entry.connection);
  while (!entries_.empty() && entries_.front().taken) entries_.pop_front();
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
  last_out_of_turn_ = false;
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
