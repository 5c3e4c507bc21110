// The reader side of the string log (agent/string_log.h), on the sender thread: the texts
// published since the last read, for the next batch's `strings`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "agent/string_log.h"

namespace memtap {

struct StringText {
  uint32_t id;
  const char* text;  // in the agent's log, which is never unmapped; NUL-terminated
  uint32_t length;
};

// Where the sender stands in the log. Ids are published out of order (each by the thread
// that took it), so the ones passed over while still unpublished are kept to look at again.
struct StringCursor {
  uint32_t next = 1;              // every id below it is sent, or in `waiting`
  std::vector<uint32_t> waiting;  // taken, not yet published when last looked at
};

// Appends to out the texts published since the last call, about max_bytes of them at most
// (one text always fits). True when it reached the end of what is published; false when it
// stopped at max_bytes with more to read.
//
// Every text that a record drained before this call names is among them (or was in an
// earlier call): the text was published before the record that names it, and the drain
// read that record with acquire.
bool read_new_strings(const StringLog* log, StringCursor* cursor, size_t max_bytes,
                      std::vector<StringText>* out);

}  // namespace memtap
