// A recording session as the monitor sees it: every traced process, their events put back
// into one timestamp order, and each FREE paired with its MALLOC.
//
// No sockets and no SQLite here: raw Cap'n Proto messages go in (ingest), DumpRows come
// out through the sink, in timestamp order across all processes. Ordering works by
// watermark: each Batch promises that the process sends nothing older than watermarkNs,
// so rows older than the smallest watermark of all processes still running are final.
// A process that said Bye, or that `forget_process` was told is dead, no longer holds
// the watermark back; nor, once a horizon is set, does one whose watermark lags the present
// too far (stalled: SessionLimits::stall_timeout_ns).
//
// Context: each (process, thread) has an owner stack (ownerPush/ownerPop; the label joins
// the levels with '@', outermost first), open operators (opStart/opEnd: a MALLOC is named
// after the innermost) and the Python / C stack waiting for its next malloc or mmap. A
// fork() child's forking thread (tid == the child's pid) starts with the owner stack and
// open operators of the parent's thread that forked, as they were at the fork.
//
// The framework pool (PTA, device_pairing.h): a poolFree whose completion is its thread's
// next event (deviceStream records aside) is one FREE row, else a pending FREE and later a
// FREE_COMPLETED row. When a batch ends between the two, the release waits at the FREE
// for the process's next batch (or its end), so the rows do not depend on where the
// agent's sender cut the batches.
//
// Strings: agents intern text per instance (Batch.strings); the session maps every
// (instance, id) to one session string id, equal texts sharing an id, and the rows carry
// session ids. Ids are resolved when an event is applied, so a definition may arrive after
// the event that uses it as long as the event is still held; an id still unknown then
// gives empty text and counts in ProcessInfo::unresolved_strings.
//
// Untrusted senders (docs/design-notes.md, monitor/engine "Hostile input"): every message is
// checked before it changes anything, and what is refused is counted by why (InputCounts). A
// message names its process by (pid, instance) and carries the instance's secret (wire.capnp's
// Message.instanceSecret): one whose secret is not the one the process's first Hello carried
// was written by another sender and is refused, whichever connection it came over. A Hello
// makes a process *pending*: it is recorded (ProcessInfo, START_TRACE) only once it sends
// a Batch or Bye. Pending Hellos are bounded per connection and in all (the oldest gives
// way), dropped when nothing follows them in time, and hold the release back no further
// than they may stay pending: a storm of Hellos, or fake processes that never send
// anything, can neither grow the monitor without bound nor stall it.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/model/dump_row.h"
#include "monitor/model/process_info.h"

namespace memtap {

using RowSink = std::function<void(const DumpRow*, size_t count)>;
// One new session string: ids come 1, 2, 3, ... in order, each before the first row that
// uses it (in the same flush, strings go first). Id 0 is the empty text and never comes.
using StringSink = std::function<void(uint32_t id, std::string_view text)>;

struct IngestResult {
  bool ok = true;
  std::string error;  // why the message was rejected: names the field and what was expected
  // A Hello whose process waits for its first Batch (pending): the live monitor takes that
  // connection's next message next (monitor/live/arrival_queue.h).
  bool awaits_first_batch = false;
  // A Hello's START_TRACE time (epoch ns), else 0: how long it took to come is what the
  // live monitor's horizon learns from (monitor/live/horizon_lag.h).
  int64_t hello_start_ns = 0;
};

// Where a message came from, as the transport knows it. `connection` tells the senders'
// connections apart while they are open (the socket's descriptor: it may be reused once one
// closes), for the per-connection bound on pending Hellos only, never to trust a message.
struct MessagePeer {
  uint64_t connection = 0;
  std::string_view address;  // ZeroMQ's Peer-Address; kept with the process as peer_address
};

// What untrusted senders can make the session hold (docs/design-notes.md, monitor/engine "Hostile
// input").
struct SessionLimits {
  // Processes recorded and not ended at once: a Hello (or the message that would record its
  // process) beyond it is refused, counted as over_limit.
  size_t max_processes = 4096;
  // Hellos nothing has followed yet. Past either bound the oldest pending Hello (of the
  // connection, else of all) gives way, counted as a silent Hello. An agent sends its first
  // Batch right after its Hello, over the same connection.
  size_t max_pending_per_connection = 16;
  size_t max_pending = 1024;
  // A pending Hello is dropped once the horizon is this far past the one it came at, and
  // holds back the rows from this long before that horizon.
  int64_t pending_timeout_ns = 10'000'000'000;
  // Once a horizon is set, a running process whose watermark lags the present by more than
  // this is *stalled*: the release no longer waits for it (nor at a pool free it left open),
  // and what it sends older than the rows already out is applied late. The present is the
  // horizon, but no further than the furthest any other process has got (a running one's
  // watermark, an ended one's last event), so a monitor that is itself behind, where every
  // watermark lags the clock alike, stalls nobody, and a process alone holds back only its
  // own rows. A stalled process that catches up is waited for again. 10 s, as for a pending
  // Hello: an agent's sender at nice 19 beside busy cores lags by a second or more, which
  // must not make its rows late, and no sender holds the others' rows back for longer.
  int64_t stall_timeout_ns = 10'000'000'000;
};

// Messages refused, by why, and Hellos dropped. Each refused message changed nothing.
struct InputCounts {
  uint64_t malformed = 0;         // not a wire::Message, or one beyond its bounds
  uint64_t protocol_version = 0;  // another protocol version
  uint64_t out_of_order = 0;      // after its process's Bye, a sequence seen, after the end
  uint64_t unknown_process = 0;   // Batch or Bye of an instance whose Hello never came, or was
                                  // refused or dropped
  uint64_t spoofed = 0;           // names a process another sender started (its secret is not
                                  // the one the process's Hello carried)
  uint64_t over_limit = 0;        // a process refused: SessionLimits::max_processes reached
  // Not refused: Hellos taken, then dropped with nothing recorded, because nothing followed
  // them in time or newer ones needed the room.
  uint64_t silent_hellos = 0;

  uint64_t rejected() const {
    return malformed + protocol_version + out_of_order + unknown_process + spoofed + over_limit;
  }
};

// The running process whose word reaches least far (Session::laggard): every event it will
// still send is at `said_until_ns` (epoch) or later, by its watermark; before its first
// batch (a pending Hello), by its Hello's start. An expected fork() child counts from its
// fork. pid 0 and INT64_MAX when nothing runs.
struct Laggard {
  uint32_t pid = 0;
  int64_t said_until_ns = std::numeric_limits<int64_t>::max();
};

// How far the laggard is behind `horizon_ns` (epoch; the present, less what the live monitor
// holds rows back by in any case): 0 when it is not, nor when nothing runs. Said times are
// the agents' word and may be anything, so the difference saturates, at a quarter of int64.
inline int64_t behind_ns(const Laggard& laggard, int64_t horizon_ns) {
  constexpr int64_t kFar = std::numeric_limits<int64_t>::max() / 4;
  if (laggard.pid == 0 || laggard.said_until_ns >= horizon_ns) return 0;
  return laggard.said_until_ns < horizon_ns - kFar ? kFar : horizon_ns - laggard.said_until_ns;
}

class Session {
 public:
  explicit Session(RowSink sink, StringSink strings = {}, SessionLimits limits = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Decodes one (unpacked) wire::Message, validates it, and applies it. A rejected message
  // is counted (input_counts) and changes nothing else. Never throws.
  IngestResult ingest(const void* data, size_t size, const MessagePeer& peer = {});

  // Rows newer than this epoch time stay held even when every watermark has passed them:
  // a process whose Hello has not arrived yet may still send older events (its start-up
  // allocations). A live monitor sets it to "now minus a short lag" and calls it
  // periodically, which also releases rows when no message comes. Default: no horizon.
  void set_horizon(int64_t epoch_ns);

  // The process stopped without Bye (killed): stop waiting for its watermark. `died_ns`:
  // when its death was seen (epoch ns; 0 unknown), for ProcessInfo::ended_by. A pending Hello
  // of that pid is dropped.
  void forget_process(uint32_t pid, int64_t died_ns = 0);

  // End of session: releases every held row and writes STOP_TRACE for processes that
  // never said Bye.
  void finish();

  // In the order they started (started_before). Pending Hellos are not processes yet.
  std::vector<ProcessInfo> processes() const;
  // Messages refused, all reasons together (input_counts().rejected()).
  uint64_t rejected_messages() const;
  const InputCounts& input_counts() const;
  // Hellos that nothing has followed yet.
  size_t pending_hellos() const;
  uint64_t rows_emitted() const;
  // In ascending order, once each: processes seen (Hello) that have neither said Bye nor
  // been forgotten, pending Hellos, and fork() children expected (their parent's fork was
  // applied, their Hello has not come yet).
  std::vector<uint32_t> running_pids() const;
  // Events (and SYSTEM rows) held back waiting for the watermark.
  size_t held_events() const;
  // Fork events among them: until one is applied, its child is not a process the session
  // waits for (running_pids).
  size_t held_forks() const;
  // Live blocks kept for pairing FREEs, as each process sees them: every process's, and
  // every expected fork child's (a fork's blocks are shared, not copied, but count for each
  // process that sees them). A process's are given back once the STOP_TRACE of its Bye is
  // out.
  size_t pairing_blocks() const;
  // Epoch time of the newest row released in order (INT64_MIN before the first): how far
  // the session has got, which lags the clock by as much as the agents are behind.
  int64_t released_ns() const;
  // Live: how far the slowest running process has told the session. Stalled processes count
  // (SessionLimits::stall_timeout_ns): the release goes on without them, but what they
  // still hold is missing all the same. A live window measures against it how far behind
  // the programs it is: while an agent keeps its events (the program fills the cores, or
  // its sender gets none), nothing arrives and the analyses look up to date.
  Laggard laggard() const;
  // The text of a session string id ("" for 0 or an id not issued).
  const std::string& string_text(uint32_t id) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtap
