// When the sender leaves records in the buffers for a while instead of draining them
// (MEMTAP_HOLD_MS).
//
// Sending costs CPU on both sides of the wire: the sender's encoding and ZeroMQ's copy in
// the program, the receiving, copying and decoding in the monitor. While the program's own
// threads fill every core, all of that comes out of the program's time, however far behind
// the monitor paces itself: a two-thread allocation storm on two cores ran 1.64x its plain
// time with the sender draining every 2 ms, and 1.08x with the records left in the buffers
// until the storm was over (medians of 7 runs each). So while events come fast and the
// program's threads fill the cores, the sender holds them, for at most hold_ns and while
// the buffers are under half their bound, and sends them as soon as a look finds a core the
// program leaves free. The work moves to where the program leaves the CPU idle; the live
// view lags by at most hold_ns meanwhile, and nothing is dropped for it (half the bound is
// left for the program to write into).
//
// Plain data and a pure rule, so that it is tested without threads or clocks; the sender
// (sender.cpp) calls it once a round, and drained() after each round that drains.
#pragma once

#include <cstdint>

namespace memtap {

struct DrainHold {
  // The longest a hold lasts; 0: never hold (MEMTAP_HOLD_MS=0).
  uint64_t hold_ns = 0;
  // Looking at the program's threads reads /proc/self/task/*/stat, a few microseconds a
  // thread: it is done at most this often, and only while events come at kFastSlotsPerSecond.
  static constexpr uint64_t kLookEveryNs = 10'000'000;
  // ... and, in a process with so many threads that a look takes longer than a fiftieth of
  // that, at most once per fifty times what the last look took (looked_for).
  static constexpr uint64_t kLookCostShare = 50;
  uint64_t look_every_ns = kLookEveryNs;
  // Below this rate (8-byte slots; a record takes one, two or four, agent/event_slot.h)
  // sending costs the program little (a few hundredths of a core), and holding would gain
  // it nothing.
  static constexpr uint64_t kFastSlotsPerSecond = 2'000'000;

  uint64_t held_since_ns = 0;  // 0: not holding
  uint64_t last_look_ns = 0;
  // When the buffers were last drained, or the sender started: the rate is what waits now
  // over the time since.
  uint64_t last_drain_ns = 0;
  uint64_t holds = 0;  // holds begun (tests, and a reader of a core dump)
};

// Whether the program's own threads (not the agent's) are running or runnable on every
// core the process may use. Asked by hold_this_round at most every look_every_ns.
using ProgramFillsCores = bool (*)();

// Before a round: true to skip its drain. `waiting_slots`: published and unread now
// (unread_slots, buffer_drain.h); `buffered_bytes` and `byte_limit`: the buffers' bytes now
// and their bound (BufferRegistry::chunk_bytes, byte_limit). Deciding on what waits, not on
// what the last drain took, matters at the start of a burst: the first round of a
// two-thread storm drained 0.7 M records in 24 ms, and the storm was over by the next.
bool hold_this_round(DrainHold* hold, uint64_t now_ns, uint64_t waiting_slots,
                     uint64_t buffered_bytes, uint64_t byte_limit,
                     ProgramFillsCores program_fills_cores);

// After a round whose hold_this_round looked (last_look_ns moved), with how long the round
// took until then: spaces the looks out so that they take at most 2 % of a core.
void looked_for(DrainHold* hold, uint64_t look_ns);

// After a round that drained, with the time it began.
void drained(DrainHold* hold, uint64_t round_start_ns);

// The sender's probe: program_runnable_threads(getpid()) against usable_cpus()
// (common/cpu_share.h). False when /proc cannot be read: then nothing is held.
bool program_fills_the_cores();

}  // namespace memtap
