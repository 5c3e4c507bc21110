// What the monitor knows of one traced process (one agent instance).
//
// Filled from Hello, updated by every Batch and by Bye; written to `memtap_session`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memtap {

struct ProcessInfo {
  uint32_t pid = 0;
  uint64_t instance_id = 0;
  uint32_t ppid = 0;
  uint32_t forked_from_pid = 0;
  uint64_t memory_total_bytes = 0;  // the cgroup limit or MemTotal the agent saw; 0 unknown
  std::string hostname;
  // Where its Hello came from, as ZeroMQ names the peer: the IP address over TCP; over IPC
  // "localhost:UID:GID:PID", the kernel's credentials of the connecting process (which a
  // pid claimed in the messages may be compared with). Empty when unknown.
  std::string peer_address;
  std::vector<std::string> command_line;
  int32_t rank = -1;
  int32_t world_size = -1;
  std::string agent_version;
  int64_t realtime_offset_ns = 0;  // epoch ns = tsNs + realtime_offset_ns
  int64_t start_ns = 0;            // epoch ns of Hello
  int64_t end_ns = 0;              // epoch ns of the last event or Bye
  uint64_t events_received = 0;
  uint64_t events_dropped = 0;  // as reported by the agent (droppedSoFar / droppedTotal)
  // Handed to the wire for this recording and never received: events_sent -
  // events_sent_before - events_received, counted as batches say what was sent before them,
  // and at Bye (or the exec()ed image's Hello). The events of the messages_lost are among
  // them, and so is what was in flight when a connection to this monitor dropped (the agent
  // says Hello again over the next). 0 from an agent that does not say eventsSentBefore
  // (docs/design-notes.md, monitor/engine "What was sent, what came").
  uint64_t events_lost = 0;
  uint64_t messages_lost = 0;  // gaps in the message sequence
  // What the agent handed to the wire in all (Bye.eventsSent, or for an instance that ended
  // in exec() the new image's Hello.execedFrom; 0 without either), and how much of that went
  // before this recording's first Hello from it (Hello.eventsSentBefore: a monitor restarted
  // while it ran): an earlier monitor's share, recorded there or lost in flight when it
  // stopped, and none of this recording's.
  uint64_t events_sent = 0;
  uint64_t events_sent_before = 0;
  uint64_t unmatched_frees = 0;     // FREE of an address with no live block
  uint64_t late_events = 0;         // arrived after the watermark had passed them
  uint64_t stalls = 0;              // times the release went on without it: its watermark lagged
                                    // the present too far (SessionLimits::stall_timeout_ns)
  uint64_t lost_frees = 0;          // MALLOC/mmap over a still-live block: a synthetic FREE
                                    // closed the old block (its FREE was lost)
  uint64_t inherited_blocks = 0;    // live blocks copied from the parent at fork()
  uint64_t reconnects = 0;          // Hellos after the first: the agent lost its monitor and
                                    // came back (its sequence starts again)
  uint64_t unresolved_strings = 0;  // events whose string id was still undefined when they
                                    // were applied: their text was written empty
  bool bye_received = false;
  // How it ended, in words: process_end_text() of its Bye ("exit code 0", "signal SIGSEGV",
  // "exec"), or, with no Bye, what the monitor knows ("no final flush, ..."); empty unknown.
  std::string ended_by;
  std::vector<uint32_t> child_pids;  // from Bye
};

// The order processes are listed in (memtap_session, reports): by when they started, then
// pid and instance, so that it does not depend on which Hello arrived first.
inline bool started_before(const ProcessInfo& a, const ProcessInfo& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.pid != b.pid) return a.pid < b.pid;
  return a.instance_id < b.instance_id;
}

}  // namespace memtap
