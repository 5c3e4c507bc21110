// Session: decoded messages -> per-process pairing -> one timestamp order (see session.h).
//
// Data flow of one ingest: decode (all validation; nothing is changed by a message that
// fails it) -> per-process bookkeeping (sequence, drops, watermark) -> events held as runs in
// the reorder buffer, or applied at once when they are already late -> release of every
// held event older than the smallest watermark of the running processes -> the sink.
// Pairing happens when an event is released, never when it arrives, because a fork() must
// snapshot the parent's heap as it was at the fork's time, not as the latest batch left it.
// Context events (owner, operator, stacks, a device event's stream) change per-thread state
// at the same moment, so a MALLOC sees exactly the context its thread had set before it.
#include "monitor/engine/session.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/address_stack.h"
#include "monitor/engine/decode.h"
#include "monitor/engine/device_pairing.h"
#include "monitor/engine/heap_pairing.h"
#include "monitor/engine/reorder.h"
#include "monitor/engine/saturating.h"
#include "monitor/symbols/symbolizer.h"

namespace memtap {
namespace {

// "No promise yet": a process that has sent no Batch may still send anything, however old.
constexpr int64_t kNoWatermark = std::numeric_limits<int64_t>::min();

// Rows released in order are handed to the sink at most this many at a time (release()).
constexpr size_t kReleaseChunkRows = 65536;

// tsNs (below 2^63, checked by decode) to epoch ns; saturates instead of overflowing.
int64_t to_epoch(uint64_t monotonic_ns, int64_t realtime_offset_ns) {
  const auto ts = static_cast<int64_t>(monotonic_ns);
  if (realtime_offset_ns > 0 && ts > std::numeric_limits<int64_t>::max() - realtime_offset_ns) {
    return std::numeric_limits<int64_t>::max();
  }
  return ts + realtime_offset_ns;
}

HeldKind held_kind(EventKind kind) {
  switch (kind) {
    case EventKind::kMalloc:
      return HeldKind::kMalloc;
    case EventKind::kFree:
      return HeldKind::kFree;
    case EventKind::kMmap:
      return HeldKind::kMmap;
    case EventKind::kMunmap:
      return HeldKind::kMunmap;
    case EventKind::kRssSample:
      return HeldKind::kRssSample;
    case EventKind::kStep:
      return HeldKind::kStep;
    case EventKind::kMark:
      return HeldKind::kMark;
    case EventKind::kRangeStart:
      return HeldKind::kRangeStart;
    case EventKind::kRangeEnd:
      return HeldKind::kRangeEnd;
    case EventKind::kOwnerPush:
      return HeldKind::kOwnerPush;
    case EventKind::kOwnerPop:
      return HeldKind::kOwnerPop;
    case EventKind::kOpStart:
      return HeldKind::kOpStart;
    case EventKind::kOpEnd:
      return HeldKind::kOpEnd;
    case EventKind::kPythonStack:
      return HeldKind::kPythonStack;
    case EventKind::kCStack:
      return HeldKind::kCStack;
    case EventKind::kTraceSlice:
      return HeldKind::kTraceSlice;
    case EventKind::kDeviceMalloc:
      return HeldKind::kDeviceMalloc;
    case EventKind::kDeviceFree:
      return HeldKind::kDeviceFree;
    case EventKind::kPinnedMalloc:
      return HeldKind::kPinnedMalloc;
    case EventKind::kPinnedFree:
      return HeldKind::kPinnedFree;
    case EventKind::kKernelLaunch:
      return HeldKind::kKernelLaunch;
    case EventKind::kDeviceOom:
      return HeldKind::kDeviceOom;
    case EventKind::kDeviceInfo:
      return HeldKind::kDeviceInfo;
    case EventKind::kDeviceStream:
      return HeldKind::kDeviceStream;
    case EventKind::kPoolMalloc:
      return HeldKind::kPoolMalloc;
    case EventKind::kPoolFree:
      return HeldKind::kPoolFree;
    case EventKind::kPoolFreeCompleted:
      return HeldKind::kPoolFreeCompleted;
    case EventKind::kPoolState:
      return HeldKind::kPoolState;
    case EventKind::kPoolPeaks:
      return HeldKind::kPoolPeaks;
    case EventKind::kFork:
      break;
  }
  return HeldKind::kFork;
}

// A program that pushes owners without popping them (or hostile input) must not make the
// labels, and so the string table, grow without bound: pushes beyond this depth, or levels
// that would make a label longer than kMaxOwnerLabelBytes, keep the label of the level
// above. Operators nest no deeper than kMaxOpenOps; deeper starts are not tracked.
constexpr size_t kMaxOwnerDepth = 64;
constexpr size_t kMaxOwnerLabelBytes = 64 * 1024;
constexpr size_t kMaxOpenOps = 256;

// Every text any agent sent, once: equal texts of different processes share an id, so the
// writer and the analyzer keep (and cache formatted forms of) each text once.
class SessionStrings {
 public:
  SessionStrings() { texts_.emplace_back(); }

  uint32_t intern(std::string_view text) {
    if (text.empty()) return 0;
    if (auto it = ids_.find(text); it != ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(texts_.size());
    texts_.emplace_back(text);
    ids_.emplace(texts_.back(), id);  // deque elements never move: the view stays valid
    return id;
  }

  // The owner label of `level` nested inside the label `outer` ("outer@level"). Composed
  // once per pair: pushing the same owners again (every step) builds no string.
  uint32_t nest(uint32_t outer, uint32_t level) {
    if (outer == 0) return level;
    if (level == 0) return outer;
    const uint64_t key = (uint64_t{outer} << 32) | level;
    if (auto it = nested_.find(key); it != nested_.end()) return it->second;
    if (texts_[outer].size() + 1 + texts_[level].size() > kMaxOwnerLabelBytes) return outer;
    std::string label = texts_[outer];
    label += '@';
    label += texts_[level];
    const uint32_t id = intern(label);
    nested_.emplace(key, id);
    return id;
  }

  const std::string& text(uint32_t id) const {
    static const std::string kEmpty;
    return id < texts_.size() ? texts_[id] : kEmpty;
  }
  size_t size() const { return texts_.size(); }

 private:
  std::deque<std::string> texts_;  // by id; 0 is ""
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::unordered_map<uint64_t, uint32_t> nested_;  // (outer, level) -> label
};

// What one thread of a traced process is doing (session string ids).
struct ThreadContext {
  std::vector<uint32_t> owners;  // the owner label at each nesting depth, outermost first
  uint32_t owners_beyond = 0;    // pushes past kMaxOwnerDepth, still to be popped
  std::vector<uint32_t> ops;     // open operators, innermost last
  uint32_t stack_python = 0;     // for the thread's next malloc, mmap, device, pinned or
  uint32_t stack_c = 0;          // pool malloc, or device OOM
  bool has_stream = false;       // a deviceStream for the thread's next device or pool event
  uint64_t stream = 0;

  bool empty() const {
    return owners.empty() && owners_beyond == 0 && ops.empty() && stack_python == 0 &&
           stack_c == 0 && !has_stream;
  }
};

// What ended_by says of an instance that never said Bye: killed (SIGKILL, the OOM killer),
// or its final flush ran out of time. `died_ns` (epoch), when known, is when its death was
// seen; with it, how long after the last event that was. Without it, nothing more is
// claimed: the last event's time is end_ns already, and the death could be any time later.
std::string no_final_flush_text(const ProcessInfo& p, int64_t died_ns) {
  std::string text = "no final flush";
  if (died_ns == 0) return text;
  char after[64];
  std::snprintf(after, sizeof after, ", %.1f s after its last event",
                static_cast<double>(std::max<int64_t>(0, died_ns - p.end_ns)) / 1e9);
  return text + after;
}

std::string describe(const WireMessage& m) {
  const char* body = m.body == WireBodyKind::kHello   ? "hello"
                     : m.body == WireBodyKind::kBatch ? "batch"
                                                      : "bye";
  char instance[32];
  std::snprintf(instance, sizeof instance, "%llx", static_cast<unsigned long long>(m.instance_id));
  return std::string(body) + " from pid " + std::to_string(m.pid) + " instance 0x" + instance;
}

// A poolFree held at the end of its thread's events in its batch (PoolFollow::kOpen): whether
// its completion directly follows is for the thread's next events, in a later batch of the
// process, to say; or the process's watermark, once it passes the time the completion had
// to come by (kSameCallNs: then it is pending). Until then (or the process's end, or its
// stall) the release waits at the poolFree: its row is written in time order, and the same
// events give the same rows however the sender cut them into batches.
struct OpenPoolFree {
  uint64_t addr = 0;
  uint64_t ts_ns = 0;                     // the agent's clock (WireEvent::ts_ns), for kSameCallNs
  PoolFollow follow = PoolFollow::kOpen;  // once decided: kPending or kCompleted
};

// A C stack the agent sent as return addresses (common/address_stack.h): symbolised when it
// is defined, with the modules its batch and the earlier ones reported (the sender reports
// every module a stack lies in no later than the stack), and given a session string on its
// first use.
struct AddressStack {
  std::string addresses;   // the agent's text: what any other use of the id reads
  std::string symbolised;  // Symbolizer::stack_text, until c_stack is given
  uint32_t c_stack = 0;    // session id of `symbolised`, once used as a C stack
  uint32_t text = 0;       // session id of `addresses`, once used otherwise
};

// Modules kept per process at most: a sender that reports more is not a program's loader.
constexpr size_t kMaxModulesPerProcess = 1 << 16;

// The objects loaded in one process (Batch.modules) and what symbolises its C stacks.
struct ProcessModules {
  std::set<std::tuple<uint64_t, uint64_t, uint64_t, std::string>> known;  // no module twice
  // Holds the modules, in the order reported (a fork() child's start as its parent's).
  std::unique_ptr<Symbolizer> symbolizer = std::make_unique<Symbolizer>();

  const std::vector<LoadedModule>& modules() const { return symbolizer->modules(); }
  void add(const LoadedModule& m) {
    if (modules().size() >= kMaxModulesPerProcess) return;
    if (!known.emplace(m.load_bias, m.start, m.end, m.path).second) return;
    symbolizer->add_module(m);
  }
};

struct ProcessState {
  ProcessInfo info;
  uint64_t secret = 0;  // Message.instanceSecret of its first Hello: its messages carry it
  LiveTables tables;
  DeviceTables devices;  // HAL, HOST_PINNED and PTA blocks: a fork() child starts without any
  // By thread, in the thread's order: only the last may still be undecided.
  std::unordered_map<uint32_t, std::vector<OpenPoolFree>> open_pool_frees;
  std::unordered_map<uint32_t, uint32_t> strings;  // this agent instance's id -> session id
  std::unordered_map<uint32_t, AddressStack> address_stacks;  // agent ids not in `strings`
  ProcessModules modules;
  std::unordered_map<uint32_t, ThreadContext> threads;  // only threads with some context
  // Epoch ns before which this process will send nothing more (from Batch.watermarkNs).
  int64_t watermark_ns = kNoWatermark;
  uint64_t next_sequence = 1;  // Hello was 0
  // Its first Hello said Hello.eventsSentBefore: at Bye, what did not come is known.
  bool sent_before_said = false;
  // The most the agent has said it handed to the wire, counted as Bye.eventsSent: by a
  // batch (Batch.sentBefore and its events), its Bye, or the Hello of the image that
  // replaced it by exec() (Hello.execedFrom), which may come before its last batches.
  uint64_t sent_through = 0;
  // Replaced by exec(), and the new image's Hello said it sent more than has come: it runs
  // on until the rest has (apply_hello).
  bool exec_tail_due = false;
  // Said Bye, was forgotten, or the session finished: it no longer holds the release back,
  // and its STOP_TRACE row is held or out.
  bool ended = false;
  // Running, but its watermark lags the present too far: not waited for (mark_stalled).
  bool stalled = false;
  bool fork_claimed = false;  // matched to its parent's fork event already
  // Messages that came ahead of their turn over a reopened connection (Message.reopened),
  // by sequence, until those before them have come over the closed one.
  std::map<uint64_t, WireMessage> early;
};

// The first of `events` from `from` on that is no deviceStream record (each pool block event
// has one before it); events.size() if none.
size_t next_pool_record(const std::vector<WireEvent>& events, size_t from) {
  while (from < events.size() && events[from].kind == EventKind::kDeviceStream) ++from;
  return from;
}

// How soon after its poolFree a completion must come to be the same free call's
// (device_pairing.h says why this long).
constexpr uint64_t kSameCallNs = uint64_t(kPoolFreeFoldNs);

bool completes(const WireEvent& next, uint64_t addr, uint64_t free_ts_ns) {
  return next.kind == EventKind::kPoolFreeCompleted && next.addr == addr &&
         next.ts_ns - free_ts_ns <= kSameCallNs;
}

// A thread's events in a new batch of its process decide the poolFree its previous batch
// left open: returns the index of the completion folded into it (events.size() if none).
// Events that are all deviceStream records (or none) leave it open.
size_t decide_open_pool_free(ProcessState& p, const WireThreadEvents& thread) {
  const size_t none = thread.events.size();
  auto it = p.open_pool_frees.find(thread.thread_id);
  if (it == p.open_pool_frees.end() || it->second.back().follow != PoolFollow::kOpen) return none;
  OpenPoolFree& open = it->second.back();
  const size_t next = next_pool_record(thread.events, 0);
  if (next == none) return none;
  if (!completes(thread.events[next], open.addr, open.ts_ns)) {
    open.follow = PoolFollow::kPending;
    return none;
  }
  open.follow = PoolFollow::kCompleted;
  return next;
}

// After a batch: a poolFree left open is pending once the batch's watermark (agent clock:
// nothing older will come from the process) is past the time its completion had to come by
// to be the same free call's (kSameCallNs). Not "once a batch says nothing of its thread":
// a batch cut at kMaxRecordsPerBatch, or one of text alone, need not have drained that
// thread again, and an immediate completion would then have been taken for a late one.
void close_open_pool_frees(ProcessState& p, uint64_t watermark_ns) {
  for (auto& [thread_id, frees] : p.open_pool_frees) {
    OpenPoolFree& open = frees.back();
    if (open.follow == PoolFollow::kOpen && watermark_ns > open.ts_ns + kSameCallNs) {
      open.follow = PoolFollow::kPending;
    }
  }
}

// Messages held in ProcessState::early at most: past that, the old connection's tail is
// taken as lost (its gap counted in messages_lost) and they are applied.
constexpr size_t kMaxEarlyMessages = 256;

// A Hello nothing has followed yet: its process is recorded once a Batch or Bye comes.
struct PendingHello {
  WireMessage hello;
  uint64_t connection = 0;  // MessagePeer::connection
  std::string peer_address;
  int64_t arrived_ns = 0;  // the horizon when it came; kNoWatermark without one
  // Rows from here on wait until it is recorded or dropped: pending_timeout_ns before the
  // horizon when it came (without a horizon, all of them). Its own events are no older than
  // its start, but a Hello says that processes are starting: others, started before it,
  // may not have said theirs yet, and the release waits for them as well while it can. Not
  // from further back, though: a storm of Hellos would otherwise hold back every row for
  // as long as it goes on. An agent's Hello comes well within that of its start (its first
  // hook call); one that comes later has its oldest events late.
  int64_t holds_ns = 0;
  uint64_t order = 0;  // arrival order: the oldest gives way first
};

// Epoch time of a Hello's START_TRACE: its first hook call when the agent says, which comes
// before its constructor (and so before the Hello's clock reading); else the Hello's time.
int64_t hello_start_ns(const WireHello& h) {
  const int64_t offset =
      static_cast<int64_t>(h.clock_realtime_ns) - static_cast<int64_t>(h.clock_monotonic_ns);
  if (h.trace_start_ns != 0 && h.trace_start_ns < h.clock_monotonic_ns) {
    return to_epoch(h.trace_start_ns, offset);
  }
  return static_cast<int64_t>(h.clock_realtime_ns);
}

// Why a message is refused: the count it goes to, and the text for the log.
struct Refusal {
  uint64_t InputCounts::*counter;
  std::string error;
};

// A fork() child whose parent's fork event was applied before the child's Hello came.
// Until it comes, the child may still send events from the fork's time on, so the fork's
// time holds the release back like a running process's watermark; for as long as a
// pending Hello may wait (SessionLimits::pending_timeout_ns, by the horizon), since a fork
// event may name a child that never says Hello (one that died at once, or a sender's lie).
struct ExpectedChild {
  uint32_t parent_pid = 0;
  int64_t fork_ns = 0;                // epoch
  LiveTables tables;                  // the parent's live blocks at the fork
  ThreadContext forking_thread;       // the parent's forking thread's owners and operators
  std::vector<LoadedModule> modules;  // the parent's, at the fork
  // An exec'd image of the child said Hello first, and its image before the exec (the one
  // that kept the heap) sent events that have not come yet: the snapshot waits for it.
  bool forked_image_awaited = false;
};

// What the child's forking thread starts with: the owner stack and operators, not the
// stacks or stream waiting for the parent's next malloc or device event.
ThreadContext inherited_context(const ProcessState& parent, uint32_t thread_id) {
  ThreadContext context;
  if (auto it = parent.threads.find(thread_id); it != parent.threads.end()) {
    context.owners = it->second.owners;
    context.owners_beyond = it->second.owners_beyond;
    context.ops = it->second.ops;
  }
  return context;
}

void adopt_context(ProcessState& child, ThreadContext context) {
  if (context.empty()) return;
  child.threads.try_emplace(child.info.pid, std::move(context));
}

}  // namespace

struct Session::Impl {
  RowSink sink;
  StringSink string_sink;
  SessionStrings strings;
  size_t strings_published = 1;         // ids below this went to string_sink
  std::vector<ProcessState> processes;  // in Hello order; never erased (indices are kept)
  std::map<std::pair<uint32_t, uint64_t>, size_t> by_instance;  // (pid, instanceId)
  std::map<uint32_t, ExpectedChild> expected;                   // by the child's pid
  ReorderBuffer held;
  size_t held_forks = 0;     // fork events among `held`
  std::vector<DumpRow> out;  // rows ready for the sink, in order
  // Time of the newest row released in order: anything older arrives late.
  int64_t released_ns = std::numeric_limits<int64_t>::min();
  uint64_t last_allocation_id = 0;
  std::optional<int64_t> horizon_ns;  // see set_horizon
  SessionLimits limits;
  InputCounts counts;
  size_t live_processes = 0;  // in `processes`, not ended
  // Indices of the processes not ended, and the furthest an ended one got (its end_ns):
  // the release looks at these per message, not at every process the session has seen,
  // which in a long job that starts many short processes grows without bound.
  std::vector<size_t> running;
  int64_t furthest_ended_ns = kNoWatermark;
  std::map<std::pair<uint32_t, uint64_t>, PendingHello> pending;  // (pid, instanceId)
  std::map<uint64_t, std::pair<uint32_t, uint64_t>> pending_by_order;
  std::map<uint64_t, size_t> pending_per_connection;
  uint64_t next_pending_order = 0;
  uint64_t rows_emitted = 0;
  bool finished = false;

  std::optional<Refusal> check(const WireMessage& m) const;
  void apply(WireMessage& m, const MessagePeer& peer);
  void add_pending(WireMessage& m, const MessagePeer& peer);
  void drop_pending(std::map<std::pair<uint32_t, uint64_t>, PendingHello>::iterator it);
  void drop_oldest_pending(std::optional<uint64_t> connection);
  void expire_pending();
  void mark_ended(ProcessState& p);
  void note_ended_progress(const ProcessState& p);
  void apply_in_turn(size_t index, WireMessage& m);
  void apply_early(size_t index, bool all);
  void end_without_bye(size_t index, std::string ended_by);
  void apply_hello(const WireMessage& m, std::string peer_address);
  void apply_batch(ProcessState& p, size_t index, WireBatch& batch);
  void apply_bye(ProcessState& p, size_t index, const WireBye& bye);
  void count_sequence(ProcessState& p, uint64_t sequence);
  void note_sent_through(ProcessState& p, uint64_t through);
  std::optional<size_t> apply_execed_from(uint32_t pid, const WireExecedFrom& from);

  void hold_or_apply(size_t process, uint32_t thread_id, const HeldEvent& event);
  void hold_system_row(size_t process, HeldKind kind, int64_t epoch_ns);
  void queue_stop(size_t process);
  void apply_event(size_t process, uint32_t thread_id, const HeldEvent& event);
  bool pool_free_waits(const ProcessState& p, uint32_t thread_id) const;
  PoolFollow take_pool_follow(ProcessState& p, uint32_t thread_id, const HeldEvent& event);
  void apply_context(ProcessState& p, uint32_t thread_id, const HeldEvent& event);
  void apply_device(ProcessState& p, uint32_t thread_id, const HeldEvent& event);
  AllocContext take_alloc_context(ProcessState& p, uint32_t thread_id);
  void take_stream(ProcessState& p, uint32_t thread_id, DeviceCall& call);
  uint32_t resolve(ProcessState& p, uint32_t agent_string_id);
  uint32_t resolve_c_stack(ProcessState& p, uint32_t agent_string_id);
  void apply_fork(size_t parent, uint32_t thread_id, const HeldEvent& event);
  void mark_stalled();
  std::optional<int64_t> release_limit() const;
  void release();
  void flush();
};

std::optional<Refusal> Session::Impl::check(const WireMessage& m) const {
  if (finished)
    return Refusal{&InputCounts::out_of_order, describe(m) + " after the session finished"};
  const auto key = std::make_pair(m.pid, m.instance_id);
  const auto it = by_instance.find(key);
  const auto waiting = pending.find(key);
  // Whoever knows a process's pid and instance (they are in the recording) may claim them;
  // only its agent knows the secret its first Hello carried.
  if (it != by_instance.end() || waiting != pending.end()) {
    const uint64_t secret = it != by_instance.end() ? processes[it->second].secret
                                                    : waiting->second.hello.instance_secret;
    if (m.instance_secret != secret) {
      return Refusal{&InputCounts::spoofed,
                     describe(m) + " without that instance's secret: another sender's message"};
    }
  }
  const bool new_process = it == by_instance.end();
  if (new_process && (waiting != pending.end() || m.body == WireBodyKind::kHello) &&
      live_processes >= limits.max_processes) {
    return Refusal{&InputCounts::over_limit,
                   describe(m) + ": " + std::to_string(live_processes) +
                       " processes are being recorded, the most this monitor takes " +
                       "(--max-processes)"};
  }
  if (m.body == WireBodyKind::kHello) {
    if (!new_process && processes[it->second].info.bye_received) {
      return Refusal{&InputCounts::out_of_order,
                     describe(m) + " after its bye, expected nothing more"};
    }
    if (m.sequence != 0) {
      return Refusal{&InputCounts::out_of_order,
                     describe(m) + ": sequence " + std::to_string(m.sequence) + ", expected 0"};
    }
    return std::nullopt;
  }
  if (new_process && waiting == pending.end()) {
    return Refusal{&InputCounts::unknown_process,
                   describe(m) + " before its hello, expected a hello first"};
  }
  const uint64_t next_sequence = new_process ? 1 : processes[it->second].next_sequence;
  if (!new_process && processes[it->second].info.bye_received) {
    return Refusal{&InputCounts::out_of_order,
                   describe(m) + " after its bye, expected nothing more"};
  }
  if (m.sequence < next_sequence) {
    return Refusal{&InputCounts::out_of_order,
                   describe(m) + ": sequence " + std::to_string(m.sequence) +
                       " already seen, expected " + std::to_string(next_sequence) + " or later"};
  }
  return std::nullopt;
}

void Session::Impl::apply(WireMessage& m, const MessagePeer& peer) {
  const auto key = std::make_pair(m.pid, m.instance_id);
  if (m.body == WireBodyKind::kHello) {
    // A second Hello from an instance we know: its agent lost the connection (a monitor
    // restart, a network hiccup) and starts its sequence again. What ZeroMQ dropped with
    // the old connection shows at Bye, as events_lost; the agent counts what it discarded.
    if (auto it = by_instance.find(key); it != by_instance.end()) {
      apply_early(it->second, true);
      ProcessState& p = processes[it->second];
      ++p.info.reconnects;
      p.next_sequence = 1;
      return;
    }
    // Again before anything else came: the first one stands.
    if (pending.count(key) == 0) add_pending(m, peer);
    return;
  }
  // The first Batch or Bye of a pending Hello: its process is recorded from here.
  if (auto it = pending.find(key); it != pending.end()) {
    PendingHello hello = std::move(it->second);
    pending_by_order.erase(hello.order);
    if (--pending_per_connection[hello.connection] == 0) {
      pending_per_connection.erase(hello.connection);
    }
    pending.erase(it);
    apply_hello(hello.hello, std::move(hello.peer_address));
  }
  const size_t index = by_instance.at(key);
  ProcessState& p = processes[index];
  // An agent whose exec failed goes on over a new connection, and the PULL socket takes
  // connections in turn: the new one's messages may come before the old one's last.
  if (m.sequence > p.next_sequence && (m.reopened || !p.early.empty())) {
    const uint64_t sequence = m.sequence;
    p.early.emplace(sequence, std::move(m));
    if (p.early.size() > kMaxEarlyMessages) apply_early(index, true);
    return;
  }
  apply_in_turn(index, m);
  apply_early(index, false);
}

void Session::Impl::add_pending(WireMessage& m, const MessagePeer& peer) {
  // Room first: the newest Hello stays, the oldest gives way (an agent's first Batch follows
  // its Hello at once, so a Hello that waits long is not an agent's).
  if (pending_per_connection[peer.connection] >=
      std::max<size_t>(1, limits.max_pending_per_connection)) {
    drop_oldest_pending(peer.connection);
  }
  if (pending.size() >= std::max<size_t>(1, limits.max_pending)) drop_oldest_pending(std::nullopt);
  PendingHello hello;
  hello.connection = peer.connection;
  hello.peer_address = peer.address;
  hello.arrived_ns = horizon_ns.value_or(kNoWatermark);
  hello.holds_ns = horizon_ns ? *horizon_ns - limits.pending_timeout_ns : kNoWatermark;
  hello.order = next_pending_order++;
  hello.hello = std::move(m);
  const auto key = std::make_pair(hello.hello.pid, hello.hello.instance_id);
  ++pending_per_connection[hello.connection];
  pending_by_order.emplace(hello.order, key);
  pending.emplace(key, std::move(hello));
}

void Session::Impl::drop_pending(
    std::map<std::pair<uint32_t, uint64_t>, PendingHello>::iterator it) {
  ++counts.silent_hellos;
  pending_by_order.erase(it->second.order);
  if (--pending_per_connection[it->second.connection] == 0) {
    pending_per_connection.erase(it->second.connection);
  }
  pending.erase(it);
}

// The oldest pending Hello (of `connection`, or of all).
void Session::Impl::drop_oldest_pending(std::optional<uint64_t> connection) {
  for (const auto& [order, key] : pending_by_order) {
    auto it = pending.find(key);
    if (connection && it->second.connection != *connection) continue;
    drop_pending(it);
    return;
  }
}

// Pending Hellos the horizon has left pending_timeout_ns behind: nothing followed them.
void Session::Impl::expire_pending() {
  if (!horizon_ns) return;
  for (auto it = expected.begin(); it != expected.end();) {
    // Compared so, not as a difference: a fork time is the sender's word and may be anything.
    if (it->second.fork_ns <= *horizon_ns - limits.pending_timeout_ns) {
      it = expected.erase(it);
    } else {
      ++it;
    }
  }
  for (auto order = pending_by_order.begin(); order != pending_by_order.end();) {
    auto it = pending.find(order->second);
    ++order;
    PendingHello& hello = it->second;
    if (hello.arrived_ns == kNoWatermark) {  // came before any horizon: it waits from now
      hello.arrived_ns = *horizon_ns;
      continue;
    }
    if (*horizon_ns - hello.arrived_ns < limits.pending_timeout_ns) return;
    drop_pending(it);
  }
}

void Session::Impl::mark_ended(ProcessState& p) {
  if (p.ended) return;
  p.ended = true;
  --live_processes;
  const size_t index = size_t(&p - processes.data());
  auto it = std::find(running.begin(), running.end(), index);
  if (it != running.end()) {
    *it = running.back();
    running.pop_back();
  }
  note_ended_progress(p);
}

// An ended process's events may still come (one forgotten, then heard of after all).
void Session::Impl::note_ended_progress(const ProcessState& p) {
  if (p.ended) furthest_ended_ns = std::max(furthest_ended_ns, p.info.end_ns);
}

void Session::Impl::apply_in_turn(size_t index, WireMessage& m) {
  ProcessState& p = processes[index];
  count_sequence(p, m.sequence);
  if (m.body == WireBodyKind::kBatch) {
    apply_batch(p, index, m.batch);
  } else {
    apply_bye(p, index, m.bye);
  }
}

// The early messages whose turn has come; `all`: every one, gaps before them counted lost.
void Session::Impl::apply_early(size_t index, bool all) {
  std::map<uint64_t, WireMessage>& early = processes[index].early;
  while (!early.empty() && (all || early.begin()->first == processes[index].next_sequence)) {
    WireMessage m = std::move(early.begin()->second);
    early.erase(early.begin());
    if (!processes[index].info.bye_received) apply_in_turn(index, m);
  }
}

// The instance ends without having said Bye; `ended_by` says how, as far as we know.
void Session::Impl::end_without_bye(size_t index, std::string ended_by) {
  apply_early(index, true);
  ProcessState& p = processes[index];
  if (p.ended) return;
  if (p.info.ended_by.empty()) p.info.ended_by = std::move(ended_by);
  queue_stop(index);
}

void Session::Impl::count_sequence(ProcessState& p, uint64_t sequence) {
  p.info.messages_lost += sequence - p.next_sequence;
  p.next_sequence = sequence + 1;
}

// Lost so far, without waiting for a Bye that a killed process never sends: of what the
// agent has handed to the wire by now, this recording's share, minus what came. The
// numbers are the agent's word: saturated.
void Session::Impl::note_sent_through(ProcessState& p, uint64_t through) {
  p.sent_through = std::max(p.sent_through, through);
  if (!p.sent_before_said) return;
  ProcessInfo& info = p.info;
  const uint64_t ours =
      p.sent_through > info.events_sent_before ? p.sent_through - info.events_sent_before : 0;
  info.events_lost = ours > info.events_received ? ours - info.events_received : 0;
}

// What an instance that ended in exec() would have said in its Bye, said by the image that
// replaced it: the events its exec flush gave up are counted as dropped, and what it sent
// and has not come yet as lost until it comes. Returns the instance, if known here.
std::optional<size_t> Session::Impl::apply_execed_from(uint32_t pid, const WireExecedFrom& from) {
  const auto it = by_instance.find(std::make_pair(pid, from.instance_id));
  if (it == by_instance.end()) return std::nullopt;
  ProcessState& old = processes[it->second];
  // Pid and instance are public; the secret is the old instance's own word.
  if (old.info.bye_received || old.secret != from.instance_secret) return std::nullopt;
  old.info.events_dropped = std::max(old.info.events_dropped, from.dropped_total);
  old.info.events_sent = from.events_sent;
  note_sent_through(old, from.events_sent);
  return it->second;
}

void Session::Impl::apply_hello(const WireMessage& m, std::string peer_address) {
  const WireHello& h = m.hello;
  // Another agent instance in a pid we know on the same host, not a fork child: the old
  // program exec()ed this one, and its instance ends here without a Bye (exec discards it).
  // Left running, it would hold every row back until the session ends.
  // (Its agent sent what it had before the exec, but no Bye: see agent/hooks/exec_hooks.cpp.)
  // The Hello of an agent that says what the old image sent (Hello.execedFrom) lets the old
  // one run until all of it has come (over its closed connection, which the PULL socket may
  // read after this one's): its rows then come out in their place, not late. A part that
  // never comes (a lost message) leaves it to the stall rule.
  if (h.forked_from_pid == 0) {
    const std::optional<size_t> named =
        h.execed_from ? apply_execed_from(m.pid, *h.execed_from) : std::nullopt;
    const std::vector<size_t> running_now = running;  // end_without_bye takes from it
    for (size_t i : running_now) {
      ProcessState& old = processes[i];
      if (old.info.pid == m.pid && !old.ended && old.info.hostname == h.hostname) {
        if (named == i && old.sent_before_said && old.info.events_lost > 0) {
          old.exec_tail_due = true;
          old.info.ended_by = process_end_text(ProcessEnd::kExeced, 0);
          continue;
        }
        end_without_bye(i, process_end_text(ProcessEnd::kExeced, 0));
      }
    }
  }
  ProcessState p;
  p.secret = m.instance_secret;
  ProcessInfo& info = p.info;
  info.pid = m.pid;
  info.instance_id = m.instance_id;
  info.peer_address = std::move(peer_address);
  info.ppid = h.ppid;
  info.forked_from_pid = h.forked_from_pid;
  info.memory_total_bytes = h.memory_total_bytes;
  // Only the first Hello's: a Hello again over a new connection to this same monitor counts
  // events this recording was to receive.
  info.events_sent_before = h.events_sent_before.value_or(0);
  p.sent_before_said = h.events_sent_before.has_value();
  info.hostname = h.hostname;
  info.command_line = h.command_line;
  info.rank = h.rank;
  info.world_size = h.world_size;
  info.agent_version = h.agent_version;
  info.realtime_offset_ns =
      static_cast<int64_t>(h.clock_realtime_ns) - static_cast<int64_t>(h.clock_monotonic_ns);
  // START_TRACE goes before every event.
  info.start_ns = hello_start_ns(h);
  info.end_ns = info.start_ns;

  // The child of a fork already applied: it takes the snapshot, and the fork's time keeps
  // holding the release until its first Batch says how far it has got. A child that
  // exec()ed (forkedFromPid 0, same pid and parent) inherits nothing: exec replaced the
  // address space. It ends the wait, unless the image it replaced sent events that have
  // not come (Hello.execedFrom names an instance not seen yet): that image's Hello, over its
  // own, closed connection, may be read after this one (Python's subprocess with
  // preexec_fn), and it is the one that kept the heap. Without the snapshot its FREEs of
  // its parent's blocks were unmatched. If it never comes, the wait expires as any does.
  if (auto it = expected.find(m.pid); it != expected.end()) {
    ExpectedChild& child = it->second;
    const bool kept_heap = h.forked_from_pid == child.parent_pid;
    if (kept_heap || (h.forked_from_pid == 0 && h.ppid == child.parent_pid)) {
      p.fork_claimed = true;
      p.watermark_ns = child.fork_ns;
      if (kept_heap) {
        info.inherited_blocks = live_blocks(child.tables);
        p.tables = std::move(child.tables);
        adopt_context(p, std::move(child.forking_thread));
        for (const LoadedModule& m : child.modules) p.modules.add(m);
        expected.erase(it);
      } else if (h.execed_from && h.execed_from->events_sent > 0 &&
                 !by_instance.count(std::make_pair(m.pid, h.execed_from->instance_id))) {
        child.forked_image_awaited = true;
      } else if (!child.forked_image_awaited) {
        expected.erase(it);
      }
    }
  }

  const int64_t start_ns = info.start_ns;
  const size_t index = processes.size();
  processes.push_back(std::move(p));
  ++live_processes;
  running.push_back(index);
  by_instance.emplace(std::make_pair(m.pid, m.instance_id), index);
  hold_system_row(index, HeldKind::kStartTrace, start_ns);
}

void Session::Impl::apply_batch(ProcessState& p, size_t index, WireBatch& batch) {
  ProcessInfo& info = p.info;
  const int64_t offset = info.realtime_offset_ns;
  info.events_dropped = std::max(info.events_dropped, batch.dropped_so_far);
  // Modules before the texts: a C stack's frames lie in modules of its batch or earlier ones.
  for (const LoadedModule& m : batch.modules) p.modules.add(m);
  // Definitions first: events of this batch (late ones are applied below) may use them.
  // An id defined twice keeps its first text: the agent never reuses ids.
  std::vector<uint64_t> addresses;
  for (WireString& def : batch.strings) {
    if (p.strings.count(def.id) != 0 || p.address_stacks.count(def.id) != 0) continue;
    if (parse_address_stack(def.text, &addresses)) {
      AddressStack& stack = p.address_stacks[def.id];
      stack.symbolised = p.modules.symbolizer->stack_text(addresses.data(), addresses.size());
      stack.addresses = std::move(def.text);
      continue;
    }
    p.strings.emplace(def.id, strings.intern(def.text));
  }
  // Late events (older than rows already out) are applied at once, but in time order
  // across the batch's threads, or a free on one thread could precede its malloc on another.
  std::vector<std::pair<HeldEvent, uint32_t>> late;
  for (WireThreadEvents& thread : batch.threads) {
    info.events_received += thread.events.size();
    HeldRun run;
    run.process = index;
    run.thread_id = thread.thread_id;
    run.events.reserve(thread.events.size());
    // A pool block's completion that directly follows its poolFree folds into it: both
    // events say so (PoolFollow), decided here, where the thread's next events are at hand.
    size_t folded =
        p.open_pool_frees.empty() ? thread.events.size() : decide_open_pool_free(p, thread);
    for (size_t i = 0; i < thread.events.size(); ++i) {
      const WireEvent& e = thread.events[i];
      HeldEvent event{to_epoch(e.ts_ns, offset), e.addr,   e.size_bytes, held_kind(e.kind),
                      PoolFollow::kPending,      e.device, e.string_id};
      if (i == folded) event.pool_follow = PoolFollow::kCompleted;
      if (e.kind == EventKind::kPoolFree) {
        const size_t next = next_pool_record(thread.events, i + 1);
        if (next == thread.events.size()) {
          event.pool_follow = PoolFollow::kOpen;
        } else if (completes(thread.events[next], e.addr, e.ts_ns)) {
          event.pool_follow = PoolFollow::kCompleted;
          folded = next;
        }
      }
      info.end_ns = std::max(info.end_ns, event.epoch_ns);
      if (event.epoch_ns < released_ns) {
        // Rows up to released_ns are out already: apply it now, within its process's
        // order (everything still held is newer), and let the row go out of order. A
        // poolFree applied now cannot wait for the next batch: pending unless decided.
        if (event.pool_follow == PoolFollow::kOpen) event.pool_follow = PoolFollow::kPending;
        ++info.late_events;
        late.emplace_back(event, thread.thread_id);
        continue;
      }
      if (event.pool_follow == PoolFollow::kOpen && e.kind == EventKind::kPoolFree) {
        p.open_pool_frees[thread.thread_id].push_back({e.addr, e.ts_ns, PoolFollow::kOpen});
      }
      // The merge needs each run in time order; a thread whose clock went backwards
      // (an agent bug, or hostile input) starts a new run instead of breaking it.
      if (!run.events.empty() && event.epoch_ns < run.events.back().epoch_ns) {
        HeldRun next;
        next.process = index;
        next.thread_id = thread.thread_id;
        hold_run(held, std::move(run));
        run = std::move(next);
      }
      run.events.push_back(event);
      if (e.kind == EventKind::kFork) ++held_forks;
    }
    hold_run(held, std::move(run));
  }
  std::stable_sort(late.begin(), late.end(), [](const auto& a, const auto& b) {
    return a.first.epoch_ns < b.first.epoch_ns;
  });
  if (!p.open_pool_frees.empty()) close_open_pool_frees(p, batch.watermark_ns);
  for (const auto& [event, thread_id] : late) apply_event(index, thread_id, event);
  p.watermark_ns = std::max(p.watermark_ns, to_epoch(batch.watermark_ns, offset));
  note_ended_progress(p);  // once a batch: read only by the release after it
  // What the agent had handed to the wire by the end of this batch.
  if (batch.sent_before) {
    uint64_t through = *batch.sent_before;
    for (const WireThreadEvents& thread : batch.threads) {
      through = saturating_add(through, uint64_t(thread.events.size()));
    }
    note_sent_through(p, through);
  }
  if (p.exec_tail_due && info.events_lost == 0 && !p.ended) end_without_bye(index, info.ended_by);
}

void Session::Impl::apply_bye(ProcessState& p, size_t index, const WireBye& bye) {
  ProcessInfo& info = p.info;
  const int64_t bye_ns = to_epoch(bye.ts_ns, info.realtime_offset_ns);
  info.events_dropped = std::max(info.events_dropped, bye.dropped_total);
  info.events_sent = bye.events_sent;
  // Of what the agent handed over since this recording's first Hello, what never came.
  note_sent_through(p, bye.events_sent);
  info.child_pids = bye.child_pids;
  info.bye_received = true;
  info.ended_by = process_end_text(bye.end, bye.end_code);
  info.end_ns = std::max(info.end_ns, bye_ns);
  note_ended_progress(p);
  if (!p.ended) {  // a forgotten process that says Bye after all has its STOP already
    mark_ended(p);
    hold_system_row(index, HeldKind::kStopTrace, bye_ns);
  }
}

void Session::Impl::hold_or_apply(size_t process, uint32_t thread_id, const HeldEvent& event) {
  if (event.epoch_ns < released_ns) {
    apply_event(process, thread_id, event);
    return;
  }
  HeldRun run;
  run.process = process;
  run.thread_id = thread_id;
  run.events.push_back(event);
  hold_run(held, std::move(run));
}

void Session::Impl::hold_system_row(size_t process, HeldKind kind, int64_t epoch_ns) {
  hold_or_apply(process, processes[process].info.pid, HeldEvent{epoch_ns, 0, 0, kind});
}

// STOP_TRACE for a process that never said Bye, at its last event. Not before what is
// already out, though: a process idle since long ago would otherwise get a row out of order.
void Session::Impl::queue_stop(size_t process) {
  ProcessState& p = processes[process];
  mark_ended(p);
  hold_system_row(process, HeldKind::kStopTrace, std::max(p.info.end_ns, released_ns));
}

void Session::Impl::apply_event(size_t process, uint32_t thread_id, const HeldEvent& event) {
  ProcessState& p = processes[process];
  const RowStamp stamp{event.epoch_ns, p.info.pid, thread_id};
  PairingOutput pairing{out, last_allocation_id, p.info.unmatched_frees, p.info.lost_frees};
  switch (event.kind) {
    case HeldKind::kMalloc:
      pair_malloc(p.tables, stamp, event.addr, event.size_bytes, take_alloc_context(p, thread_id),
                  pairing);
      return;
    case HeldKind::kFree:
      pair_free(p.tables, stamp, event.addr, pairing);
      return;
    case HeldKind::kMmap:
      pair_mmap(p.tables, stamp, event.addr, event.size_bytes, take_alloc_context(p, thread_id),
                pairing);
      return;
    case HeldKind::kMunmap:
      pair_munmap(p.tables, stamp, event.addr, event.size_bytes, pairing);
      return;
    case HeldKind::kFork:
      apply_fork(process, thread_id, event);
      return;
    case HeldKind::kRssSample: {
      DumpRow row;
      row.event = DumpEvent::kSnapshot;
      row.event_type = DumpEventType::kSnapshot;
      row.timestamp_ns = event.epoch_ns;
      row.process_id = p.info.pid;
      row.thread_id = thread_id;
      row.size_bytes = event.size_bytes;
      row.total_bytes = p.info.memory_total_bytes;
      out.push_back(row);
      return;
    }
    case HeldKind::kStartTrace:
    case HeldKind::kStopTrace: {
      DumpRow row;
      row.event = DumpEvent::kSystem;
      row.event_type = event.kind == HeldKind::kStartTrace ? DumpEventType::kStartTrace
                                                           : DumpEventType::kStopTrace;
      row.timestamp_ns = event.epoch_ns;
      row.process_id = p.info.pid;
      row.thread_id = thread_id;
      out.push_back(row);
      // After its Bye nothing of the instance is applied any more (its events come before
      // the Bye, and later messages are refused), so its blocks pair nothing: given back.
      // Each DataLoader worker holds a copy of its parent's, and the monitor of a script
      // that ran three epochs of four workers beside a 1 M-block heap kept 2 GB of them.
      // A process ended without Bye keeps them: it may still be heard of.
      if (event.kind == HeldKind::kStopTrace && p.info.bye_received) p.tables = LiveTables{};
      return;
    }
    case HeldKind::kDeviceMalloc:
    case HeldKind::kDeviceFree:
    case HeldKind::kPinnedMalloc:
    case HeldKind::kPinnedFree:
    case HeldKind::kKernelLaunch:
    case HeldKind::kDeviceOom:
    case HeldKind::kDeviceInfo:
    case HeldKind::kDeviceStream:
    case HeldKind::kPoolMalloc:
    case HeldKind::kPoolFree:
    case HeldKind::kPoolFreeCompleted:
    case HeldKind::kPoolState:
    case HeldKind::kPoolPeaks:
      apply_device(p, thread_id, event);
      return;
    case HeldKind::kStep:
    case HeldKind::kMark:
    case HeldKind::kRangeStart:
    case HeldKind::kRangeEnd:
    case HeldKind::kOwnerPush:
    case HeldKind::kOwnerPop:
    case HeldKind::kOpStart:
    case HeldKind::kOpEnd:
    case HeldKind::kPythonStack:
    case HeldKind::kCStack:
    case HeldKind::kTraceSlice:
      apply_context(p, thread_id, event);
      return;
  }
}

uint32_t Session::Impl::resolve(ProcessState& p, uint32_t agent_string_id) {
  if (agent_string_id == 0) return 0;
  if (auto it = p.strings.find(agent_string_id); it != p.strings.end()) return it->second;
  if (auto it = p.address_stacks.find(agent_string_id); it != p.address_stacks.end()) {
    if (it->second.text == 0) it->second.text = strings.intern(it->second.addresses);
    return it->second.text;
  }
  ++p.info.unresolved_strings;
  return 0;
}

// A cStack's text: an address stack's symbolised frames, interned once per distinct stack;
// any other text (an older agent's, symbolised by dladdr) as it came.
uint32_t Session::Impl::resolve_c_stack(ProcessState& p, uint32_t agent_string_id) {
  auto it = p.address_stacks.find(agent_string_id);
  if (it == p.address_stacks.end()) return resolve(p, agent_string_id);
  AddressStack& stack = it->second;
  if (stack.c_stack == 0) {
    stack.c_stack = strings.intern(stack.symbolised);
    std::string().swap(stack.symbolised);
  }
  return stack.c_stack;
}

// The context a malloc, mmap, device, pinned or pool malloc (or a device OOM) of this thread is
// recorded with; the stacks waiting for it are used up. Processes that send no context
// never look a thread up.
AllocContext Session::Impl::take_alloc_context(ProcessState& p, uint32_t thread_id) {
  AllocContext context;
  if (p.threads.empty()) return context;
  auto it = p.threads.find(thread_id);
  if (it == p.threads.end()) return context;
  ThreadContext& t = it->second;
  if (!t.owners.empty()) context.owner = t.owners.back();
  if (!t.ops.empty()) context.name = t.ops.back();
  context.stack_python = t.stack_python;
  context.stack_c = t.stack_c;
  t.stack_python = 0;
  t.stack_c = 0;
  if (t.empty()) p.threads.erase(it);
  return context;
}

// The stream a deviceStream record left for this thread's next device or pool event, used up
// by it whatever that event is.
void Session::Impl::take_stream(ProcessState& p, uint32_t thread_id, DeviceCall& call) {
  if (p.threads.empty()) return;
  auto it = p.threads.find(thread_id);
  if (it == p.threads.end() || !it->second.has_stream) return;
  ThreadContext& t = it->second;
  call.has_stream = true;
  call.stream = t.stream;
  t.has_stream = false;
  t.stream = 0;
  if (t.empty()) p.threads.erase(it);
}

// Whether the release must wait at this thread's poolFree left open (OpenPoolFree): its
// process may still send the batch that decides it.
bool Session::Impl::pool_free_waits(const ProcessState& p, uint32_t thread_id) const {
  if (finished || p.ended || p.stalled) return false;
  const auto it = p.open_pool_frees.find(thread_id);
  return it != p.open_pool_frees.end() && it->second.front().follow == PoolFollow::kOpen;
}

// Whether the block a poolFree frees goes back to the pool at once (kCompleted) or later
// (kPending); one left open takes what its thread's next batch decided, or pending.
PoolFollow Session::Impl::take_pool_follow(ProcessState& p, uint32_t thread_id,
                                           const HeldEvent& event) {
  if (event.pool_follow != PoolFollow::kOpen) return event.pool_follow;
  const auto it = p.open_pool_frees.find(thread_id);
  if (it == p.open_pool_frees.end()) return PoolFollow::kPending;
  const OpenPoolFree open = it->second.front();
  it->second.erase(it->second.begin());
  if (it->second.empty()) p.open_pool_frees.erase(it);
  return open.addr == event.addr && open.follow == PoolFollow::kCompleted ? PoolFollow::kCompleted
                                                                          : PoolFollow::kPending;
}

// GPU memory: HAL and HOST_PINNED blocks, the framework pool's (PTA) blocks and figures,
// kernel launches, OOMs with the blocks live then, a device's capacity. Rows about a device
// carry its ordinal as their Device Id; pinned blocks are host memory (`cpu`).
void Session::Impl::apply_device(ProcessState& p, uint32_t thread_id, const HeldEvent& event) {
  if (event.kind == HeldKind::kDeviceStream) {
    ThreadContext& t = p.threads[thread_id];
    t.has_stream = true;
    t.stream = event.addr;
    return;
  }
  const RowStamp stamp{event.epoch_ns, p.info.pid, thread_id};
  DeviceCall call{event.addr, event.size_bytes, int32_t{event.device}};
  take_stream(p, thread_id, call);
  PairingOutput pairing{out, last_allocation_id, p.info.unmatched_frees, p.info.lost_frees};
  DumpRow row;
  row.timestamp_ns = stamp.timestamp_ns;
  row.process_id = stamp.process_id;
  row.thread_id = stamp.thread_id;
  row.device = call.device;
  switch (event.kind) {
    case HeldKind::kDeviceMalloc:
    case HeldKind::kPinnedMalloc: {
      // Named after the operator that allocated it, as a heap block is; outside any, after
      // the API (cudaMalloc, cuMemMap, cudaHostAlloc, ...), which says more than N/A.
      AllocContext context = take_alloc_context(p, thread_id);
      if (context.name == 0) context.name = resolve(p, event.string_id);
      pair_device_malloc(
          p.devices,
          event.kind == HeldKind::kDeviceMalloc ? DeviceLayer::kHal : DeviceLayer::kHostPinned,
          stamp, call, context, pairing);
      return;
    }
    case HeldKind::kDeviceFree:
    case HeldKind::kPinnedFree:
      pair_device_free(
          p.devices,
          event.kind == HeldKind::kDeviceFree ? DeviceLayer::kHal : DeviceLayer::kHostPinned, stamp,
          call, pairing);
      return;
    case HeldKind::kKernelLaunch:
      row.event = DumpEvent::kKernelLaunch;
      row.event_type = DumpEventType::kKernelLaunch;
      row.name = resolve(p, event.string_id);
      row.has_stream = true;
      row.stream = event.addr;  // the launch's own stream, whatever a deviceStream said
      out.push_back(row);
      return;
    case HeldKind::kDeviceOom: {
      const AllocContext context = take_alloc_context(p, thread_id);
      row.event = DumpEvent::kOomDetail;
      row.event_type = DumpEventType::kOomTrigger;
      row.name = resolve(p, event.string_id);
      row.size_bytes = event.size_bytes;
      row.has_stream = true;
      row.stream = event.addr;
      row.stack_python = context.stack_python;
      row.stack_c = context.stack_c;
      out.push_back(row);
      append_oom_top_rows(p.devices, stamp, call.device, out);
      return;
    }
    case HeldKind::kDeviceInfo:
      row.event = DumpEvent::kSystem;
      row.event_type = DumpEventType::kStartTrace;
      row.size_bytes = event.addr;         // free
      row.total_bytes = event.size_bytes;  // capacity (decode checked free <= total < 2^63)
      out.push_back(row);
      return;
    case HeldKind::kPoolMalloc:
      // Named after the operator that allocated it, as a heap block is; no API to fall back on.
      pair_pool_malloc(p.devices, stamp, call, take_alloc_context(p, thread_id), pairing);
      return;
    case HeldKind::kPoolFree:
      pair_pool_free(p.devices, stamp, call,
                     take_pool_follow(p, thread_id, event) == PoolFollow::kCompleted, pairing);
      return;
    case HeldKind::kPoolFreeCompleted:
      // Folded into the FREE before it, which said the block went back at once.
      if (event.pool_follow == PoolFollow::kCompleted) return;
      complete_pool_free(p.devices, stamp, call, pairing);
      return;
    case HeldKind::kPoolState:
      // Decode checked both below 2^63.
      pool_state_row(p.devices, stamp, call.device, int64_t(event.addr), int64_t(event.size_bytes),
                     out);
      return;
    case HeldKind::kPoolPeaks:
      // Decode checked both below 2^63.
      hold_pool_peaks(p.devices, call.device, int64_t(event.addr), int64_t(event.size_bytes));
      return;
    default:
      return;
  }
}

// Steps, marks, ranges, operators, owners, stacks and tracer slices.
void Session::Impl::apply_context(ProcessState& p, uint32_t thread_id, const HeldEvent& event) {
  DumpRow row;
  row.timestamp_ns = event.epoch_ns;
  row.process_id = p.info.pid;
  row.thread_id = thread_id;
  const uint32_t text = event.kind == HeldKind::kCStack ? resolve_c_stack(p, event.string_id)
                                                        : resolve(p, event.string_id);
  auto context = [&]() -> ThreadContext& { return p.threads[thread_id]; };
  auto drop_if_empty = [&] {
    if (auto it = p.threads.find(thread_id); it != p.threads.end() && it->second.empty()) {
      p.threads.erase(it);
    }
  };
  switch (event.kind) {
    case HeldKind::kStep:
      row.event = DumpEvent::kSystem;
      row.event_type = DumpEventType::kStep;
      row.step = event.addr;
      break;
    case HeldKind::kMark:
    case HeldKind::kRangeStart:
    case HeldKind::kRangeEnd:
      row.event = DumpEvent::kMstx;
      row.event_type = event.kind == HeldKind::kMark         ? DumpEventType::kMark
                       : event.kind == HeldKind::kRangeStart ? DumpEventType::kRangeStart
                                                             : DumpEventType::kRangeEnd;
      row.name = text;
      break;
    case HeldKind::kOpStart:
      if (ThreadContext& t = context(); t.ops.size() < kMaxOpenOps) t.ops.push_back(text);
      row.event = DumpEvent::kOpLaunch;
      row.event_type = DumpEventType::kAtenStart;
      row.name = text;
      break;
    case HeldKind::kOpEnd: {
      // An end closes the latest open operator of its name, and any opened inside it that
      // never ended; an end that matches none changes nothing (its row is still written).
      if (auto it = p.threads.find(thread_id); it != p.threads.end()) {
        std::vector<uint32_t>& ops = it->second.ops;
        auto match = std::find(ops.rbegin(), ops.rend(), text);
        if (match != ops.rend()) ops.erase(std::prev(match.base()), ops.end());
        drop_if_empty();
      }
      row.event = DumpEvent::kOpLaunch;
      row.event_type = DumpEventType::kAtenEnd;
      row.name = text;
      break;
    }
    case HeldKind::kOwnerPush: {
      ThreadContext& t = context();
      if (t.owners.size() >= kMaxOwnerDepth) {
        ++t.owners_beyond;
        return;
      }
      t.owners.push_back(strings.nest(t.owners.empty() ? 0 : t.owners.back(), text));
      return;
    }
    case HeldKind::kOwnerPop:
      if (auto it = p.threads.find(thread_id); it != p.threads.end()) {
        ThreadContext& t = it->second;
        if (t.owners_beyond != 0) {
          --t.owners_beyond;
        } else if (!t.owners.empty()) {
          t.owners.pop_back();
        }
        drop_if_empty();
      }
      return;
    case HeldKind::kPythonStack:
      context().stack_python = text;
      drop_if_empty();  // a stack id that resolved to nothing leaves nothing waiting
      return;
    case HeldKind::kCStack:
      context().stack_c = text;
      drop_if_empty();
      return;
    case HeldKind::kTraceSlice:
      row.event = DumpEvent::kTraceSlice;
      row.timestamp_ns = to_epoch(event.addr, p.info.realtime_offset_ns);
      row.end_ns = to_epoch(event.size_bytes, p.info.realtime_offset_ns);
      row.name = text;
      break;
    default:
      return;
  }
  out.push_back(row);
}

void Session::Impl::apply_fork(size_t parent, uint32_t thread_id, const HeldEvent& event) {
  const uint32_t parent_pid = processes[parent].info.pid;
  ThreadContext forking_thread = inherited_context(processes[parent], thread_id);
  const auto child_pid = static_cast<uint32_t>(event.addr);  // decode checked the range
  // The child's Hello may have come first (its events are newer than the fork, so none of
  // them has been applied yet), and after an exec its new image's Hello too (Python's
  // subprocess with preexec_fn). Its unclaimed instances, newest first: exec'd images (no
  // fork origin, this parent) are claimed and inherit nothing, and the forked image, which
  // kept the heap, takes the snapshot, a pass over every live block of the parent. Claiming
  // the newest alone left a forked image behind an exec'd one without its parent's blocks:
  // its FREEs of them were unmatched.
  bool claimed = false;
  for (size_t i = processes.size(); i-- > 0;) {
    ProcessState& c = processes[i];
    const ProcessInfo& info = c.info;
    if (info.pid != child_pid || c.fork_claimed) continue;
    const bool kept_heap = info.forked_from_pid == parent_pid;
    if (!kept_heap && !(info.forked_from_pid == 0 && info.ppid == parent_pid)) continue;
    c.fork_claimed = true;
    claimed = true;
    if (!kept_heap) continue;
    LiveTables snapshot = snapshot_for_child(processes[parent].tables, parent_pid);
    c.info.inherited_blocks += live_blocks(snapshot);
    seed_from_parent(c.tables, std::move(snapshot));
    adopt_context(c, std::move(forking_thread));
    // A child's own first batch reports its modules too; these cover what it sent before.
    for (const LoadedModule& m : processes[parent].modules.modules()) c.modules.add(m);
    return;  // older instances of the pid are another process's
  }
  if (claimed) return;
  expected.insert_or_assign(
      child_pid, ExpectedChild{parent_pid, event.epoch_ns,
                               snapshot_for_child(processes[parent].tables, parent_pid),
                               std::move(forking_thread), processes[parent].modules.modules()});
}

// Which running processes the release no longer waits for (SessionLimits::stall_timeout_ns):
// each is measured against the horizon, capped by the furthest any other process has got.
// Only with a horizon: without one there is no present to lag.
void Session::Impl::mark_stalled() {
  if (!horizon_ns || finished) return;
  // The two furthest processes' progress, so that each is measured against the others'.
  // Ended processes take part through the furthest of them (never stalled themselves).
  int64_t first = furthest_ended_ns;
  int64_t second = kNoWatermark;
  size_t first_index = processes.size();
  for (size_t i : running) {
    const int64_t progress = processes[i].watermark_ns;
    if (progress > first) {
      second = first;
      first = progress;
      first_index = i;
    } else if (progress > second) {
      second = progress;
    }
  }
  const int64_t limit = limits.stall_timeout_ns;
  for (size_t i : running) {
    ProcessState& p = processes[i];
    const int64_t present = std::min(*horizon_ns, i == first_index ? second : first);
    // Compared so, not as a difference: watermarks are the senders' word and may be anything.
    const bool stalled = present > kNoWatermark + limit && p.watermark_ns < present - limit;
    if (stalled && !p.stalled) ++p.info.stalls;
    p.stalled = stalled;
  }
}

// The time below which every held event is final; nullopt when nothing holds it back.
std::optional<int64_t> Session::Impl::release_limit() const {
  if (finished) return std::nullopt;
  std::optional<int64_t> limit;
  auto lower = [&limit](int64_t ns) { limit = limit ? std::min(*limit, ns) : ns; };
  for (size_t i : running) {
    if (!processes[i].stalled) lower(processes[i].watermark_ns);
  }
  for (const auto& entry : expected) lower(entry.second.fork_ns);
  for (const auto& entry : pending) lower(entry.second.holds_ns);
  if (horizon_ns) lower(*horizon_ns);
  return limit;
}

void Session::Impl::release() {
  mark_stalled();
  std::optional<int64_t> limit = release_limit();
  while (held.held_events > 0) {
    const HeldRun& run = oldest_run(held);
    const HeldEvent event = run.events[run.next];
    const size_t process = run.process;
    const uint32_t thread_id = run.thread_id;
    // The heap table is larger than the cache: ask for the slot of an event a few ahead
    // in this run (FlatMap::prefetch), which is mostly what comes next.
    constexpr size_t kAhead = 8;
    if (run.next + kAhead < run.events.size()) {
      const HeldEvent& ahead = run.events[run.next + kAhead];
      if (ahead.kind == HeldKind::kMalloc || ahead.kind == HeldKind::kFree) {
        prefetch_heap(processes[process].tables, ahead.addr);
      }
    }
    if (limit && event.epoch_ns >= *limit) break;
    if (event.pool_follow == PoolFollow::kOpen && event.kind == HeldKind::kPoolFree &&
        pool_free_waits(processes[process], thread_id)) {
      break;
    }
    drop_oldest(held);
    released_ns = std::max(released_ns, event.epoch_ns);
    apply_event(process, thread_id, event);
    // A fork may have made a child expected: its fork time now holds the rest back.
    if (event.kind == HeldKind::kFork) {
      --held_forks;
      limit = release_limit();
    }
    // Handed on in pieces: a backlog released at once (a horizon passing seconds of held
    // events) grew `out` to millions of rows, 120 bytes each, reallocated and copied as it
    // grew (2 % of the receiving thread's time in a 6-step PyTorch script's recording).
    if (out.size() >= kReleaseChunkRows) flush();
  }
}

void Session::Impl::flush() {
  // Strings before rows: a row may use any string defined so far.
  for (; strings_published < strings.size(); ++strings_published) {
    const auto id = static_cast<uint32_t>(strings_published);
    if (string_sink) string_sink(id, strings.text(id));
  }
  if (out.empty()) return;
  rows_emitted += out.size();
  if (sink) sink(out.data(), out.size());
  out.clear();
}

Session::Session(RowSink sink, StringSink strings, SessionLimits limits)
    : impl_(std::make_unique<Impl>()) {
  impl_->sink = std::move(sink);
  impl_->string_sink = std::move(strings);
  impl_->limits = limits;
}

Session::~Session() = default;

IngestResult Session::ingest(const void* data, size_t size, const MessagePeer& peer) {
  Impl& s = *impl_;
  IngestResult result;
  try {
    DecodeResult decoded = decode_message(data, size);
    std::optional<Refusal> refusal;
    if (!decoded.ok) {
      refusal =
          Refusal{decoded.why == DecodeError::kProtocolVersion ? &InputCounts::protocol_version
                                                               : &InputCounts::malformed,
                  std::move(decoded.error)};
    } else {
      refusal = s.check(decoded.message);
    }
    if (refusal) {
      ++(s.counts.*refusal->counter);
      result.ok = false;
      result.error = std::move(refusal->error);
      return result;
    }
    const auto key = std::make_pair(decoded.message.pid, decoded.message.instance_id);
    if (decoded.message.body == WireBodyKind::kHello) {
      result.hello_start_ns = hello_start_ns(decoded.message.hello);
    }
    s.apply(decoded.message, peer);
    s.release();
    s.flush();
    result.awaits_first_batch = s.pending.count(key) != 0;
  } catch (const std::exception& e) {
    // Only allocation failure can get here (decode catches Cap'n Proto's own errors): the
    // message may be half applied, but the caller must still never see an exception.
    ++s.counts.malformed;
    s.out.clear();
    result.ok = false;
    result.error = std::string("applying the message failed: ") + e.what();
  } catch (...) {
    ++s.counts.malformed;
    s.out.clear();
    result.ok = false;
    result.error = "applying the message failed";
  }
  return result;
}

void Session::set_horizon(int64_t epoch_ns) {
  Impl& s = *impl_;
  if (s.finished) return;
  s.horizon_ns = epoch_ns;
  s.expire_pending();
  s.release();
  s.flush();
}

void Session::forget_process(uint32_t pid, int64_t died_ns) {
  Impl& s = *impl_;
  if (s.finished) return;
  for (size_t i = 0; i < s.processes.size(); ++i) {
    const ProcessState& p = s.processes[i];
    if (p.info.pid == pid && !p.ended) s.end_without_bye(i, no_final_flush_text(p.info, died_ns));
  }
  for (auto it = s.pending.begin(); it != s.pending.end();) {
    auto next = std::next(it);
    if (it->first.first == pid) s.drop_pending(it);
    it = next;
  }
  s.expected.erase(pid);
  s.release();
  s.flush();
}

void Session::finish() {
  Impl& s = *impl_;
  if (s.finished) return;
  for (size_t i = 0; i < s.processes.size(); ++i) {
    if (!s.processes[i].ended) s.end_without_bye(i, no_final_flush_text(s.processes[i].info, 0));
  }
  while (!s.pending.empty()) s.drop_pending(s.pending.begin());
  s.finished = true;
  s.expected.clear();
  s.release();
  s.flush();
}

std::vector<ProcessInfo> Session::processes() const {
  std::vector<ProcessInfo> infos;
  infos.reserve(impl_->processes.size());
  for (const ProcessState& p : impl_->processes) infos.push_back(p.info);
  std::sort(infos.begin(), infos.end(), started_before);
  return infos;
}

uint64_t Session::rejected_messages() const {
  return impl_->counts.rejected();
}

const InputCounts& Session::input_counts() const {
  return impl_->counts;
}

size_t Session::pending_hellos() const {
  return impl_->pending.size();
}

uint64_t Session::rows_emitted() const {
  return impl_->rows_emitted;
}

int64_t Session::released_ns() const {
  return impl_->released_ns;
}

std::vector<uint32_t> Session::running_pids() const {
  std::vector<uint32_t> pids;
  for (size_t i : impl_->running) pids.push_back(impl_->processes[i].info.pid);
  for (const auto& entry : impl_->pending) pids.push_back(entry.first.first);
  for (const auto& entry : impl_->expected) pids.push_back(entry.first);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

Laggard Session::laggard() const {
  Laggard slowest;
  auto lower = [&slowest](uint32_t pid, int64_t ns) {
    if (ns < slowest.said_until_ns) slowest = {pid, ns};
  };
  for (size_t i : impl_->running) {
    const ProcessState& p = impl_->processes[i];
    lower(p.info.pid, p.watermark_ns == kNoWatermark ? p.info.start_ns : p.watermark_ns);
  }
  for (const auto& [pid, child] : impl_->expected) lower(pid, child.fork_ns);
  // A Hello whose first batch has not come holds the release back (PendingHello::holds_ns),
  // having said nothing past its start: an agent sends that batch right after, and one whose
  // sender then gets no core (nice 19 from its Hello on, beside busy cores) keeps every view
  // waiting.
  for (const auto& [key, hello] : impl_->pending)
    lower(key.first, hello_start_ns(hello.hello.hello));
  return slowest;
}

size_t Session::held_events() const {
  return impl_->held.held_events;
}

size_t Session::held_forks() const {
  return impl_->held_forks;
}

size_t Session::pairing_blocks() const {
  size_t n = 0;
  for (const ProcessState& p : impl_->processes) n += live_blocks(p.tables);
  for (const auto& [pid, child] : impl_->expected) n += live_blocks(child.tables);
  return n;
}

const std::string& Session::string_text(uint32_t id) const {
  return impl_->strings.text(id);
}

}  // namespace memtap
