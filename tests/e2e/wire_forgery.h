// Wire messages made by hand, for tests that play a hostile or broken sender against a
// real monitor: what an agent would send, with any field a test likes, and the header of a
// real agent's message read back.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace memtap::e2e {

// Message's header fields (common/wire.capnp).
struct ForgedHeader {
  uint32_t pid = 0;
  uint64_t instance_id = 0;
  uint64_t instance_secret = 0;
  uint64_t sequence = 0;
  uint32_t protocol_version = 0;  // 0: the one this build speaks
};

// One event: a malloc of `size` at `addr` when size != 0, else a free of `addr`, now.
struct ForgedEvent {
  uint64_t addr = 0;
  uint64_t size = 0;
};

// A Hello whose clocks are read now, so that its process's rows fall in the test's time;
// with `trace_start_ns` (CLOCK_MONOTONIC), its process started then (Hello.traceStartNs).
std::string forged_hello(const ForgedHeader& h, const std::string& hostname,
                         uint64_t trace_start_ns = 0);
// A Batch of `events` on thread `tid`, timestamped now, with the watermark just after.
std::string forged_batch(const ForgedHeader& h, uint32_t tid,
                         const std::vector<ForgedEvent>& events);
// The same with the times given: event i at first_ns + i * step_ns, and the watermark
// (CLOCK_MONOTONIC ns, as an agent sends them).
std::string forged_batch_at(const ForgedHeader& h, uint32_t tid,
                            const std::vector<ForgedEvent>& events, uint64_t first_ns,
                            uint64_t step_ns, uint64_t watermark_ns);
// A Hello says it is its agent's first connection (eventsSentBefore 0); a Bye, that the
// agent sent `events_sent` events in all.
std::string forged_bye(const ForgedHeader& h, uint64_t events_sent = 0);

// A Batch whose one thread's event list claims `claimed` zero-sized elements, in a message
// padded to about 8 KB by a string: within Cap'n Proto's traversal limit, beyond what the
// message can hold.
std::string batch_claiming_events(const ForgedHeader& h, unsigned claimed);

// What a test learns from a real agent's message.
struct ReadHeader {
  bool ok = false;
  uint32_t pid = 0;
  uint64_t instance_id = 0;
  char body = '?';                            // 'h'ello, 'b'atch, 'y' bye
  uint64_t events = 0;                        // a batch's events, all its threads'
  std::map<uint64_t, uint64_t> malloc_sizes;  // a batch's malloc events: how many of each size
  uint64_t events_sent_before = 0;            // a hello's Hello.eventsSentBefore
};
ReadHeader read_header(const void* data, size_t size);

}  // namespace memtap::e2e
