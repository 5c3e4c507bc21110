// The sender thread: drains the per-thread buffers every few milliseconds, encodes
// Cap'n Proto batches and pushes them to the monitor with non-blocking ZeroMQ.
//
// This file is built into libmemtap_sender.so, which the agent loads with dlmopen into a
// link namespace of its own: its ZeroMQ, Cap'n Proto, libstdc++ and libc are private
// copies, invisible to the application, and nothing here reaches the agent's hooks.
//
// Flow control: with ZMQ_IMMEDIATE a message is accepted only while a monitor is
// connected and its queue has room. When it is not, we simply stop draining: records stay
// in the per-thread buffers, which are bounded (MEMTAP_BUFFER_MB); past the bound the
// hooks drop and count, and the count travels in the next batch.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/raw_syscalls.h"
#include "agent/sender/buffer_drain.h"
#include "agent/sender/drain_hold.h"
#include "agent/sender/memory_sampler.h"
#include "agent/sender/module_scan.h"
#include "agent/sender/namespace_threads.h"
#include "agent/sender/sender_api.h"
#include "agent/sender/sender_fds.h"
#include "agent/sender/starvation.h"
#include "agent/sender/string_drain.h"
#include "agent/sender/tsc_converter.h"
#include "agent/sender/wire_encoder.h"
#include "common/clock.h"
#include "common/connection_token.h"
#include "common/cpu_share.h"
#include "common/process_end.h"
#include "common/thread_nice.h"

namespace memtap {
namespace {

constexpr size_t kMaxRecordsPerBatch = 65536;
constexpr uint64_t kHeartbeatCycles = 10;  // an empty batch carries the watermark forward
// Text beyond this goes ahead in batches of its own (a fork() child, or a new monitor,
// gets the whole string log at once), so that no message grows with the log.
constexpr size_t kMaxStringBytesPerBatch = size_t{4} << 20;
// Modules found and not sent yet, at most; past it the oldest go (their stacks' frames then
// show as "??").
constexpr size_t kMaxUnsentModules = 8192;
// Of the final flush's time, at most a quarter and at most this is kept for the Bye and the
// batches ZeroMQ holds to reach the monitor (final_flush).
constexpr uint32_t kByeReserveMs = 2000;
// The catch-up thread (catch_up) looks this often at how far behind the rounds are, and takes
// them over once the last round that left nothing waiting began longer ago than the grace
// (plus MEMTAP_HOLD_MS, a lag the sender takes on purpose).
constexpr uint64_t kCatchUpLookNs = 100'000'000;
constexpr uint64_t kCatchUpGraceNs = 1'000'000'000;
// While it catches up, it looks at the machine's runnable threads (its share) this often.
constexpr uint64_t kShareLookNs = 25'000'000;
// The shortest wait between the catch-up thread's looks while it takes the resident set's
// readings: the rounds' thread may hold the reading for a moment (sample_if_rounds_do_not).
constexpr uint64_t kMinSampleWaitNs = 1'000'000;

// Who does a round: the sender thread, behind the program, or the catch-up thread at the
// program's priority, one batch at a time and paced.
enum class RoundBy { kSender, kCatchUp };

// One sender per process (per namespace, and a fork() child gets a fresh namespace).
// Global because the agent reaches it only through plain C calls.
struct Sender {
  MemtapSenderConfig config{};
  std::string endpoint, hostname, cmdline, agent_version;
  std::string curve_server_key, curve_public_key, curve_secret_key;  // empty: no CURVE
  bool refused = false;  // the monitor refused our keys, or their absence: we stopped trying
  void* ctx = nullptr;
  void* sock = nullptr;
  void* watch = nullptr;        // PAIR end of zmq_socket_monitor: connected / disconnected
  struct stat sock_fd_stat {};  // of the socket's ZMQ_FD, when it was opened
  int sock_fd = -1;
  std::atomic<bool> sock_open{false};  // sock_fd is set: published by the thread that opened it
  bool connected = false;              // a monitor is connected right now
  uint64_t pending_events = 0;         // records in `pending` when it is a batch
  uint64_t dropped_in_sender = 0;      // records of batches discarded at a reconnection
  std::thread thread;
  std::atomic<bool> stop_requested{false};
  int32_t end = 0, end_code = 0;  // Bye's, from memtap_sender_stop (before stop_requested)
  bool exec_flush = false;        // the stop is exec's: no Bye, and the thread may start again
  // An exec proper, whose new image says what this instance left (Hello.execedFrom): what
  // the flush cannot send in time is given up and counted. Not set when the program closes
  // the sender's descriptors (the sender comes back and sends it then).
  bool exec_hands_off = false;
  bool reopened = false;  // after a failed exec, until ZeroMQ takes a message on the new socket
  // After a failed exec: the thread opens a socket only once there is something to send
  // (see wait_for_something_to_send). Read by the thread, and by the caller after a join.
  bool deferred = false;
  uint64_t dropped_at_exec = 0;  // total_dropped when the last exec flush closed the socket
  std::atomic<bool> running{false};
  bool closed = false;  // a crash flush closed the socket on the sender thread
  // Events ZeroMQ took, over every connection so far: Bye.eventsSent, and each Hello's
  // eventsSentBefore (what earlier connections got, and this one's monitor will not).
  std::atomic<uint64_t> events_sent{0};
  uint64_t sequence = 0;
  uint64_t watermark_sent = 0;  // the newest Batch.watermarkNs given to this connection
  bool hello_sent = false;
  // An encoded message ZeroMQ did not take yet, sent before anything else: a view of
  // `owned` (Hello, Bye) or of the batch encoder's buffer, which is not reused before then.
  std::string_view pending;
  std::string owned;
  BatchEncoder batches;
  DrainResult drained;
  StringCursor string_cursor;  // from 1 again for each monitor that has not seen them
  std::vector<StringText> strings;
  ModuleScan module_scan;              // reported again to each monitor that has not seen them
  std::vector<ScannedModule> modules;  // scanned, not in a batch yet
  TscConverter tsc;
  std::unique_ptr<MemorySampler> sampler;
  DrainHold hold;  // rounds skipped while the program fills the cores (drain_hold.h)

  // Rounds (one_round), by the sender thread or the catch-up thread. Whichever does one holds
  // `rounds`, which guards every member above that the thread uses (the socket, the encoder,
  // the buffers' reading side) and these three.
  std::mutex rounds;
  uint64_t cycle = 0, last_sent_cycle = 0;
  uint64_t previous_cycle_start = 0;  // when the round before this one began
  // The catch-up thread: started by the sender thread once its socket is open (run), at the
  // program's nice value; joined by whoever stops the sender thread.
  pthread_t catch_up_thread{};
  bool catch_up_started = false;
  std::atomic<bool> catching_up{false};  // it does the rounds now; the sender thread waits
  // When the last round that left nothing waiting began (or the rounds began).
  std::atomic<uint64_t> caught_up_ns{0};
  // 1 from the stop on: the catch-up thread's waits end on it (a futex word that changes, so
  // that a stop before the wait began is not missed).
  std::atomic<uint32_t> stop_word{0};
};
Sender* g_sender = nullptr;

MessageHeader header(Sender& s) {
  return MessageHeader{s.config.pid, s.config.instance_id, s.sequence, s.config.instance_secret,
                       s.reopened};
}

// The monitor said no to this agent's security: a key it does not accept, or CURVE on one
// side only. Asking again would be refused again (and fill the monitor's log), so the
// sender stops connecting and the agent stops recording, saying why once.
void refused(Sender& s, bool key_refused) {
  if (s.refused) return;
  s.refused = true;
  s.connected = false;
  zmq_disconnect(s.sock, s.endpoint.c_str());
  char why[600];
  if (key_refused) {
    snprintf(why, sizeof why, "the monitor at %s refused this agent's key (MEMTAP_KEYS)",
             s.endpoint.c_str());
  } else if (!s.curve_secret_key.empty()) {
    snprintf(why, sizeof why,
             "the monitor at %s does not use CURVE keys, but MEMTAP_KEYS is set (start it "
             "with --keys DIR)",
             s.endpoint.c_str());
  } else {
    snprintf(why, sizeof why,
             "the monitor at %s accepts only agents with CURVE keys: set MEMTAP_KEYS to a "
             "key directory (memtap keygen)",
             s.endpoint.c_str());
  }
  if (s.config.refused) s.config.refused(why);
}

using Clock = std::chrono::steady_clock;

// The milliseconds from now until `deadline`, 0 once it has passed: each wait of a bounded
// operation takes what is left of the operation's time.
int ms_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return int(std::max<int64_t>(0, left.count()));
}

// The message ZeroMQ did not take is not sent: at a disconnection and before an exec (its
// sequence number belonged to that connection), and at the final flush's deadline. A batch's
// records are counted as dropped.
void give_up_pending(Sender& s) {
  s.dropped_in_sender += s.pending_events;
  s.events_sent.fetch_sub(s.pending_events, std::memory_order_relaxed);
  s.pending = {};
  s.pending_events = 0;
}

// Applies the connection events ZeroMQ reported since the last call.
void watch_connection(Sender& s) {
  for (;;) {
    zmq_msg_t event, address;
    zmq_msg_init(&event);
    if (zmq_msg_recv(&event, s.watch, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&event);
      return;
    }
    uint16_t id = 0;
    uint32_t value = 0;
    if (zmq_msg_size(&event) >= sizeof id + sizeof value) {
      memcpy(&id, zmq_msg_data(&event), sizeof id);
      memcpy(&value, static_cast<const char*>(zmq_msg_data(&event)) + sizeof id, sizeof value);
    }
    zmq_msg_close(&event);
    zmq_msg_init(&address);  // every event is followed by the endpoint's address
    zmq_msg_recv(&address, s.watch, 0);
    zmq_msg_close(&address);
    if (id == ZMQ_EVENT_CONNECTED) s.connected = true;
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ||
        (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
         value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)) {
      refused(s, id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
    }
    if (id == ZMQ_EVENT_DISCONNECTED) {
      // Whoever answers next may be another monitor (a restart), which has never heard of
      // us: the next message is a Hello again, with the sequence from 0. With
      // ZMQ_IMMEDIATE nothing is sent until then. A batch ZeroMQ would not take is given
      // up and counted, since its sequence number belonged to the old connection.
      s.connected = false;
      give_up_pending(s);
      s.hello_sent = false;
      s.sequence = 0;
      s.watermark_sent = 0;
      s.string_cursor = StringCursor{};
      forget_reported_modules(&s.module_scan);
    }
  }
}

// One try at handing s.pending to ZeroMQ, as zmq_send returns. A batch is lent, not
// copied: ZeroMQ's I/O thread writes it to the socket from the encoder's buffer and frees it
// with BatchEncoder::release_lent. A message it refuses is closed, which frees it at once.
int send_pending(Sender& s) {
  void* lent = s.batches.lend(s.pending);
  if (!lent) return zmq_send(s.sock, s.pending.data(), s.pending.size(), ZMQ_DONTWAIT);
  zmq_msg_t msg;
  zmq_msg_init_data(&msg, const_cast<char*>(s.pending.data()), s.pending.size(),
                    &BatchEncoder::release_lent, lent);
  int rc = zmq_msg_send(&msg, s.sock, ZMQ_DONTWAIT);
  if (rc < 0) {
    int error = errno;
    zmq_msg_close(&msg);
    errno = error;
  }
  return rc;
}

// Sends s.pending; true when ZeroMQ took it (or there was nothing to send). With a
// timeout, waits for room, but stops waiting as soon as the monitor is gone: a dead
// monitor must not hold the application's exit for the whole flush timeout.
bool flush_pending(Sender& s, int timeout_ms) {
  if (s.pending.empty()) return true;
  // A connection that went since the cycle began (the sender runs behind the program, and
  // can be held off its core past ZeroMQ's reconnect interval) may already have been
  // replaced by a restarted monitor's: this message would reach it before any Hello. The
  // events ZeroMQ reported are read first; a disconnection gives the batch up (counted).
  if (s.hello_sent) {
    watch_connection(s);
    if (s.pending.empty()) return false;
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (send_pending(s) < 0) {
    watch_connection(s);
    if (s.pending.empty()) return false;  // a reconnection discarded it
    const int left = ms_until(deadline);
    if (left <= 0 || !s.connected) return false;
    zmq_pollitem_t items[2] = {{s.sock, 0, ZMQ_POLLOUT, 0}, {s.watch, 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(items, 2, left) < 0 && errno != EINTR) return false;
  }
  s.pending = {};
  s.pending_events = 0;
  ++s.sequence;
  s.reopened = false;
  return true;
}

// Records lost, plus texts the string log refused (full): either way something the
// monitor will not see, and Batch.droppedSoFar is the one count that reaches it.
uint64_t total_dropped(const Sender& s) {
  uint64_t texts = s.config.strings ? s.config.strings->lost.load(std::memory_order_relaxed) : 0;
  return dropped_records(s.config.registry) + s.dropped_in_sender + texts;
}

// Waits up to timeout_ms for a monitor to be connected.
bool wait_connected(Sender& s, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (watch_connection(s); !s.connected; watch_connection(s)) {
    if (s.refused) return false;
    const int left = ms_until(deadline);
    if (left <= 0) return false;
    zmq_pollitem_t item{s.watch, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, left) < 0 && errno != EINTR) return false;
  }
  return true;
}

bool send_hello(Sender& s, int timeout_ms) {
  if (s.hello_sent) return true;
  // Only once ZeroMQ has reported a connection since the last one went. It reports a
  // disconnection before it drops that connection's queue: a Hello handed over in between
  // went with the queue, the batches after it to the next monitor, which never heard of us
  // and refused them all (seen under load, where ZeroMQ's thread runs behind the program).
  // A connection reported later comes after that queue is gone.
  if (!s.connected && !wait_connected(s, timeout_ms)) return false;
  if (s.pending.empty()) {
    uint64_t start = s.config.trace_start;
    if (start != 0 && s.config.clock_is_tsc) start = s.tsc.to_ns(start);
    // Every event counted so far went over an earlier connection (or none): drain_and_send
    // hands nothing over before Hello is out, and a batch ZeroMQ did not take was taken
    // off the count when its connection went (watch_connection).
    s.owned = encode_hello(header(s), s.config, start, s.events_sent.load());
    s.pending = s.owned;
  }
  s.hello_sent = flush_pending(s, timeout_ms);
  return s.hello_sent;
}

// How far behind the present a batch's watermark always stays. A hook reads the clock, then
// writes and publishes its record; preempted in between, it publishes a record older than
// the drains that ran meanwhile, so older than the watermark they promised, if the wait
// outlasted a cycle (2 ms, or one batch of the catch-up thread's back-to-back rounds). On a
// machine with more runnable threads than cores such a wait lasts milliseconds: 1 event of
// 2.2 M came late, 5.7 ms behind a watermark already sent (two PyTorch ranks beside four
// busy loops and another training job). Rows reach the monitor's file and window this much
// later; 50 ms is several of the scheduler's time slices on a crowded core.
constexpr uint64_t kPreemptedHookMarginNs = 50'000'000;

// The watermark a batch may carry: `bound` (see drain_and_send), no later than
// kPreemptedHookMarginNs ago, and when records still wait in the buffers, no later than the
// oldest of them (a drain interval short of it: the TSC's later anchors may place that record
// a little earlier when it is converted itself).
uint64_t batch_watermark(Sender& s, uint64_t bound) {
  const uint64_t now_ns = monotonic_ns();
  bound = std::min(bound, now_ns > kPreemptedHookMarginNs ? now_ns - kPreemptedHookMarginNs : 0);
  const uint64_t now = s.config.clock_is_tsc ? read_tsc() : now_ns;
  uint64_t oldest = 0;
  if (!oldest_unread_clock(s.config.registry, now, &oldest)) return bound;
  const uint64_t oldest_ns = s.config.clock_is_tsc ? s.tsc.to_ns(oldest) : oldest;
  const uint64_t margin_ns = uint64_t(s.config.drain_interval_us) * 1000;
  return std::min(bound, oldest_ns > margin_ns ? oldest_ns - margin_ns : 0);
}

bool crash_requested(const Sender& s) {
  return s.config.crash_flush &&
         s.config.crash_flush->requested.load(std::memory_order_acquire) != 0;
}

bool stopping(const Sender& s) {
  return s.stop_requested.load(std::memory_order_acquire) || crash_requested(s);
}

// Whether a round stops after the batch it sent: at a stop (the final flush takes the rest,
// on the exiting thread, rather than the program waiting for this round behind it), and when
// the catch-up thread does the rounds: it does one batch at a time and paces itself between
// them, and the sender thread leaves it the rounds.
bool give_way(const Sender& s, RoundBy by) {
  return stopping(s) || by == RoundBy::kCatchUp || s.catching_up.load(std::memory_order_relaxed);
}

// One drain-and-send round. Returns false when ZeroMQ would not take more.
// `watermark_ns`: no record still unpublished when the round began is older (a record
// timestamped before the previous cycle began would have had to be preempted for a whole
// cycle between its timestamp and its store). Each batch's drain is such a point for the
// next one: the round's bound moves to it. A batch carries the bound, or no later than the
// oldest record its drain left in the buffers (a drain cut at kMaxRecordsPerBatch, which
// takes the buffers in turn): told that nothing older would come, the monitor would take
// those as late, a free on one thread applied before the malloc on another. A sender that
// never caught up (nice 19 beside busy cores) sent only cut batches, whose watermark stayed
// at the round's start: the monitor held every row back until the program ended, and
// showed nothing live. A batch of text alone carries the last watermark sent.
// `final`: the last round before Bye, which also takes a last memory sample.
// Other rounds give way between batches (give_way): to a stop, and to the catch-up thread.
// `emptied`, when given, says whether the round left nothing waiting.
bool drain_and_send(Sender& s, uint64_t watermark_ns, bool send_empty, int timeout_ms,
                    bool final = false, RoundBy by = RoundBy::kSender, bool* emptied = nullptr) {
  if (emptied) *emptied = false;
  // timeout_ms bounds the whole round, not each wait in it: the final flush keeps a part of
  // its time for the Bye, which a round of many batches, each waiting its full timeout,
  // overran (ZeroMQ's linger was then 0, and what it held was lost with the Bye).
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto left_ms = [&] { return ms_until(deadline); };
  if (!send_hello(s, left_ms()) || !flush_pending(s, left_ms())) return false;
  uint64_t bound = watermark_ns;
  uint64_t previous_drain_ns = 0;
  for (;;) {
    // Each encode below needs a buffer ZeroMQ is not holding; without one the records wait
    // in the agent's buffers, as when ZeroMQ itself would not take more.
    if (!s.batches.wait_for_room(left_ms())) return false;
    s.drained.clear();
    s.strings.clear();
    if (!read_new_strings(s.config.strings, &s.string_cursor, kMaxStringBytesPerBatch,
                          &s.strings)) {
      // More text than one batch should carry: this much goes alone, the rest next time round.
      // With the modules its stacks lie in (see below).
      scan_new_modules(s.config.iterate_modules, &s.module_scan, &s.modules);
      s.pending =
          s.batches.encode(header(s), s.drained, s.strings, total_dropped(s), s.watermark_sent,
                           s.events_sent.load(std::memory_order_relaxed), s.modules);
      s.modules.clear();
      s.pending_events = 0;
      if (!flush_pending(s, left_ms())) return false;
      continue;
    }
    if (previous_drain_ns != 0) bound = std::max(bound, previous_drain_ns);
    previous_drain_ns = monotonic_ns();
    size_t n = drain_buffers(s.config.registry, kMaxRecordsPerBatch, &s.drained);
    const bool complete = n < kMaxRecordsPerBatch;
    // Texts again after the drain: each text a drained record names was published before
    // that record, so this read has it, and the batch defines it with its first use.
    read_new_strings(s.config.strings, &s.string_cursor, SIZE_MAX, &s.strings);
    // Modules last: every stack among these texts was captured before this scan, so every
    // object its frames lie in was loaded before it, and is reported now or was before (unless
    // it was unloaded again in between: then no later scan could see it either). Scanned
    // before the drain, an object dlopen()ed and used between the scan and the drain would
    // reach the monitor a batch after the stacks that need it.
    scan_new_modules(s.config.iterate_modules, &s.module_scan, &s.modules);
    if (n != 0) {
      // After the drain: every drained record is older than these readings. Records keep
      // the clock's low 48 bits (agent/event_slot.h); the reading gives back the rest.
      if (s.config.clock_is_tsc) {
        s.tsc.add_anchor();
        uint64_t now = read_tsc();
        for (EventRecord& r : s.drained.records) r.ts_ns = s.tsc.to_ns(unwrap_clock(now, r.ts_ns));
      } else {
        uint64_t now = monotonic_ns();
        for (EventRecord& r : s.drained.records) r.ts_ns = unwrap_clock(now, r.ts_ns);
      }
    }
    // Appended after the conversion: the samples are timestamped in nanoseconds already.
    const uint64_t sample_now = monotonic_ns();
    s.sampler->sample_when_due(sample_now, MemorySampler::By::kRounds);
    const size_t samples = s.sampler->take(sample_now, final || s.sequence == 1, s.watermark_sent,
                                           s.config.pid, &s.drained);
    if (n == 0 && s.strings.empty() && s.modules.empty() && !send_empty && samples == 0) {
      if (emptied) *emptied = true;
      return true;
    }
    n += samples;
    s.watermark_sent = std::max(s.watermark_sent, batch_watermark(s, bound));
    s.pending =
        s.batches.encode(header(s), s.drained, s.strings, total_dropped(s), s.watermark_sent,
                         s.events_sent.load(std::memory_order_relaxed), s.modules);
    s.modules.clear();
    s.pending_events = n;
    s.events_sent.fetch_add(n, std::memory_order_relaxed);
    if (!flush_pending(s, left_ms())) return false;
    if (complete) {
      if (emptied) *emptied = true;
      return true;
    }
    if (!final && give_way(s, by)) return true;
    send_empty = true;  // the next batch owes the watermark, even with no records
  }
}

bool ipc_socket_missing(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) != 0) return false;
  struct stat st;
  return stat(endpoint.c_str() + 6, &st) != 0;
}

// Whether ZeroMQ's descriptors are still its own. A program may close every descriptor
// before exec (Python's subprocess in a fork() child, daemons): ZeroMQ would then abort the
// process on the first call. Closing them all closes the socket's ZMQ_FD too, or gives its
// number to another file.
bool descriptors_intact(const Sender& s) {
  struct stat now;
  return s.sock_fd >= 0 && fstat(s.sock_fd, &now) == 0 && now.st_dev == s.sock_fd_stat.st_dev &&
         now.st_ino == s.sock_fd_stat.st_ino;
}

// The final flush ran out of time: the batch ZeroMQ did not take and every record still in
// the buffers will not be sent. They are counted as dropped (Bye.droppedSoFar), so the
// recording says how many went, and the program's stderr says why.
void give_up_unsent(Sender& s, uint32_t timeout_ms) {
  const uint64_t before = s.dropped_in_sender;
  give_up_pending(s);
  for (;;) {
    s.drained.clear();
    const size_t n = drain_buffers(s.config.registry, kMaxRecordsPerBatch, &s.drained);
    s.dropped_in_sender += n;
    if (n < kMaxRecordsPerBatch) break;
  }
  s.drained.clear();
  if (s.config.warn) {
    char line[200];
    const unsigned long long left = s.dropped_in_sender - before;
    if (s.connected) {
      snprintf(line, sizeof line,
               "the monitor did not take the last events in time (MEMTAP_FLUSH_TIMEOUT_MS=%u): "
               "%llu events not sent, counted as dropped",
               timeout_ms, left);
    } else {
      snprintf(line, sizeof line, "the monitor went away before the last events: %llu not sent",
               left);
    }
    s.config.warn(line);
  }
}

// Returns the milliseconds left before the deadline, for ZeroMQ's linger: messages it
// has accepted are written to the socket by its I/O thread during zmq_ctx_term.
int final_flush(Sender& s, uint32_t timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto remaining_ms = [&] { return ms_until(deadline); };
  // No monitor connected now (never reached, or gone): wait a little for the connection
  // (a short program may end before ZeroMQ has connected, a restarted monitor may be
  // coming back), not at all if its IPC socket does not even exist.
  if (s.refused) return 0;
  int wait = ipc_socket_missing(s.endpoint)
                 ? 0
                 : std::min<int>(remaining_ms(), int(s.config.connect_timeout_ms));
  if (!wait_connected(s, wait)) return 0;
  if (!send_hello(s, std::max(1, remaining_ms()))) return 0;
  // Everything published until now: nothing older can follow, so the watermark is now (less
  // kPreemptedHookMarginNs, for a hook of another thread preempted in the middle). A
  // part of the time is kept for the Bye and ZeroMQ's linger: when the monitor cannot take
  // everything in time, what is left is given up and counted, and the Bye says how much.
  // Without it the records still buffered went silently (a training script's whole loop
  // beside busy cores: the recording said "0 dropped", and "no final flush").
  const int reserve_ms = int(std::min<uint32_t>(timeout_ms / 4, kByeReserveMs));
  // Before an exec too: the new image's Hello carries the count (Hello.execedFrom), and if
  // exec fails the next batch's droppedSoFar does (kept for a failed exec instead, they went
  // uncounted with a successful one). Not when the program only closes descriptors under the
  // sender: it comes back and sends them.
  if (!drain_and_send(s, monotonic_ns(), false, std::max(1, remaining_ms() - reserve_ms), true)) {
    if (s.exec_flush && !s.exec_hands_off && !crash_requested(s)) return remaining_ms();
    give_up_unsent(s, timeout_ms);
  }
  // Before exec the new image's Hello tells the monitor this instance is over; a Bye would
  // have to be taken back if exec failed.
  if (s.exec_flush && !crash_requested(s)) return remaining_ms();
  std::vector<uint32_t> children;
  uint32_t nchildren = std::min(s.config.registry->child_count.load(), kMaxChildPids);
  for (uint32_t i = 0; i < nchildren; ++i) children.push_back(s.config.registry->child_pids[i]);
  int32_t end = s.end, end_code = s.end_code;
  if (crash_requested(s)) {
    end = int32_t(ProcessEnd::kSignalled);
    end_code = s.config.crash_flush->signal.load(std::memory_order_relaxed);
  }
  s.owned = encode_bye(header(s), monotonic_ns(), total_dropped(s), s.events_sent.load(), children,
                       end, end_code);
  s.pending = s.owned;
  flush_pending(s, std::max(1, remaining_ms()));
  return remaining_ms();
}

// ZeroMQ's context, the PUSH socket and its connection watch. Called on the sender thread,
// before it steps back: ZeroMQ starts its I/O thread and reaper here, at the program's nice
// value, and they stay there. The I/O thread writes every batch into the socket, for the
// catch-up thread too: stepped back with the sender (as it was before the catch-up thread),
// it held that thread to its own 1.5 % of a core beside busy processes, and PyTorch ranks
// still fell 10 s behind. Its work follows what the sender threads send, which they pace, and a
// two-thread allocation storm ran as fast with it at nice 0 as at 19 (bench/HISTORY.md).
// Returns an error text, empty on success.
std::string open_socket(Sender* s) {
  if (!s->curve_secret_key.empty()) {
    if (!zmq_has("curve")) return "MEMTAP_KEYS is set, but this ZeroMQ has no CURVE (libsodium)";
    // A pair copied together from two key directories is refused by the monitor anyway;
    // caught here it is named.
    char derived[41];
    if (zmq_curve_public(derived, s->curve_secret_key.c_str()) != 0 ||
        s->curve_public_key != derived) {
      return "MEMTAP_KEYS: agent.pub is not the public key of agent.key";
    }
  }
  s->ctx = zmq_ctx_new();
  // Its threads start with the first socket, named "<this thread's id>/ZMQbg/...", so that
  // a user looking at the program's threads (top -H) tells them from those of a ZeroMQ the
  // program uses itself.
  if (s->ctx) zmq_ctx_set(s->ctx, ZMQ_THREAD_NAME_PREFIX, int(raw_gettid()));
  s->sock = s->ctx ? zmq_socket(s->ctx, ZMQ_PUSH) : nullptr;
  if (!s->sock) return std::string("cannot create ZeroMQ socket: ") + zmq_strerror(errno);
  int one = 1, hwm = 256;
  zmq_setsockopt(s->sock, ZMQ_IMMEDIATE, &one, sizeof one);
  zmq_setsockopt(s->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
  // Tells this connection from one that had its descriptor at the monitor before it.
  set_connection_token(s->sock);
  if (!s->curve_secret_key.empty()) {
    // Z85 text with its NUL: 41 bytes, as zmq_setsockopt takes it.
    zmq_setsockopt(s->sock, ZMQ_CURVE_SERVERKEY, s->curve_server_key.c_str(),
                   s->curve_server_key.size() + 1);
    zmq_setsockopt(s->sock, ZMQ_CURVE_PUBLICKEY, s->curve_public_key.c_str(),
                   s->curve_public_key.size() + 1);
    zmq_setsockopt(s->sock, ZMQ_CURVE_SECRETKEY, s->curve_secret_key.c_str(),
                   s->curve_secret_key.size() + 1);
  }
  // Connection events, to know at exit whether anyone is listening at all.
  char watch_endpoint[64];
  snprintf(watch_endpoint, sizeof watch_endpoint, "inproc://memtap-sender-%p", (void*)s);
  s->watch = zmq_socket(s->ctx, ZMQ_PAIR);
  if (!s->watch ||
      zmq_socket_monitor(s->sock, watch_endpoint,
                         ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
                             ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) != 0 ||
      zmq_connect(s->watch, watch_endpoint) != 0) {
    return std::string("cannot watch the ZeroMQ socket: ") + zmq_strerror(errno);
  }
  size_t fd_size = sizeof s->sock_fd;
  if (zmq_getsockopt(s->sock, ZMQ_FD, &s->sock_fd, &fd_size) != 0 ||
      fstat(s->sock_fd, &s->sock_fd_stat) != 0) {
    s->sock_fd = -1;
  }
  s->sock_open.store(true, std::memory_order_release);
  if (zmq_connect(s->sock, s->endpoint.c_str()) != 0) {
    std::string error = "cannot connect to '" + s->endpoint + "': " + zmq_strerror(errno);
    zmq_socket_monitor(s->sock, nullptr, 0);
    zmq_close(s->watch);
    zmq_close(s->sock);
    zmq_ctx_term(s->ctx);
    s->ctx = s->sock = s->watch = nullptr;
    s->sock_fd = -1;
    s->sock_open.store(false, std::memory_order_relaxed);
    return error;
  }
  return {};
}

void close_socket(Sender& s) {
  s.closed = true;
  if (!s.sock) return;  // never opened since a failed exec (Sender::deferred)
  s.sock_open.store(false, std::memory_order_relaxed);
  zmq_socket_monitor(s.sock, nullptr, 0);
  int no_linger = 0;
  zmq_setsockopt(s.watch, ZMQ_LINGER, &no_linger, sizeof no_linger);
  zmq_close(s.watch);
  zmq_close(s.sock);
  zmq_ctx_term(s.ctx);  // waits for the linger: what ZeroMQ holds goes out here
  s.ctx = s.sock = s.watch = nullptr;
  s.sock_fd = -1;
}

// The pause between drains; a crash handler's call for the final flush cuts it short, and so
// does a stop. It waits in slices of at most 10 ms: a stop changes no futex word, so a wake-up
// that came before the wait began was lost, and an exiting program whose sender had just gone
// to sleep waited a whole interval (a minute with MEMTAP_DRAIN_INTERVAL_US=60000000).
void wait_interval(const Sender& s) {
  constexpr uint64_t kSliceNs = 10'000'000;
  const uint64_t until = monotonic_ns() + uint64_t(s.config.drain_interval_us) * 1000;
  for (uint64_t now = monotonic_ns(); now < until; now = monotonic_ns()) {
    if (stopping(s)) return;
    const uint64_t slice = std::min(kSliceNs, until - now);
    if (s.config.crash_flush) {
      raw_futex_wait(&s.config.crash_flush->requested, 0, slice);
    } else {
      std::this_thread::sleep_for(std::chrono::nanoseconds(slice));
    }
  }
}

// Signals sent to the process (kill, a scheduler's SIGTERM) go to a thread that does not
// block them. Without memtap that is one of the program's; so it stays, and the crash
// handler (agent/crash_flush.cpp) never runs here, where it could not wait for this very
// thread's flush. Faults raised by this thread's own code are not blocked: the kernel
// would kill the process for a blocked one anyway.
void block_process_signals() {
  sigset_t set;
  sigfillset(&set);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Whether the records or the loss count have moved since the last exec flush: what a new
// socket would be opened for. A text interned since then is named by no record yet.
bool something_to_send(Sender& s) {
  return unread_slots(s.config.registry) != 0 || total_dropped(s) != s.dropped_at_exec;
}

// After a failed exec (or a close_range that closed every descriptor), the thread waits for
// a reason to connect again, rather than connect at once: a program that tries exec in each
// directory of PATH (Python's subprocess, execvp-like loops) then pays one flush, not a
// connection, a drain and a linger per directory (a fork()ed Python child with preexec_fn
// took 131 ms instead of 25 ms under load). A reason: records or losses to send, a dlclose
// waiting for a module scan, a crash, or kMaxDeferMs gone by (the live view's memory samples
// and heartbeats). False when the thread was asked to stop first: no socket was opened.
bool wait_for_something_to_send(Sender& s) {
  constexpr uint64_t kMaxDeferMs = 1000;
  const uint64_t until = monotonic_ns() + kMaxDeferMs * 1'000'000;
  ModuleScanWords* scan = s.config.module_scan;
  while (!s.stop_requested.load(std::memory_order_acquire)) {
    if (crash_requested(s) || something_to_send(s) || monotonic_ns() >= until) return true;
    if (scan && scan->requested.load(std::memory_order_acquire) !=
                    scan->done.load(std::memory_order_acquire)) {
      return true;
    }
    wait_interval(s);
  }
  return false;
}

enum class RoundEnd {
  kEmptied,     // nothing waits that was published when it began
  kLeftSome,    // a batch went, and more waits
  kCannotSend,  // held, refused, or ZeroMQ takes no more now
};

// One round: a drain and send (or a hold), the modules, a dlclose's answer and dead threads'
// buffers. Under Sender::rounds, by either thread.
RoundEnd one_round(Sender& s, RoundBy by) {
  const uint64_t cycle_start = monotonic_ns();
  BufferRegistry* registry = s.config.registry;
  registry->sender_cycle_clock.store(s.config.clock_is_tsc ? read_tsc() : cycle_start,
                                     std::memory_order_relaxed);
  watch_connection(s);
  bool heartbeat = s.cycle - s.last_sent_cycle >= kHeartbeatCycles;
  size_t before = s.events_sent.load(std::memory_order_relaxed);
  // A dlclose asked before this round is answered after it: the scan here ran after the
  // ask, whether or not a monitor is there to send to (the modules wait in s.modules).
  ModuleScanWords* scan = s.config.module_scan;
  const uint32_t scan_asked = scan ? scan->requested.load(std::memory_order_acquire) : 0;
  if (!s.refused) scan_new_modules(s.config.iterate_modules, &s.module_scan, &s.modules);
  // With no monitor to take them, a dlopen/dlclose loop would add its library every round.
  if (s.modules.size() > kMaxUnsentModules) {
    s.modules.erase(s.modules.begin(), s.modules.end() - kMaxUnsentModules / 2);
  }
  // Refused: nothing is recorded any more, and nothing is sent. Held: the records wait in
  // the buffers while the program needs every core (drain_hold.h); the watermark argument
  // below holds across held rounds, which are cycles like any other. The catch-up thread
  // never holds: it paces itself instead.
  bool held = false;
  if (!s.refused && by == RoundBy::kSender) {
    const uint64_t last_look = s.hold.last_look_ns;
    const uint64_t hold_start = monotonic_ns();
    held = hold_this_round(&s.hold, cycle_start, unread_slots(registry),
                           registry->chunk_bytes.load(std::memory_order_relaxed),
                           registry->byte_limit, program_fills_the_cores);
    if (s.hold.last_look_ns != last_look) looked_for(&s.hold, monotonic_ns() - hold_start);
  }
  RoundEnd end = RoundEnd::kCannotSend;
  if (s.refused) {
    s.caught_up_ns.store(cycle_start, std::memory_order_release);  // nothing to catch up on
  } else if (!held) {
    // A record timestamped before the previous cycle began and still unpublished would
    // have to have been preempted for a whole cycle between its timestamp and its store.
    bool emptied = false;
    const bool sent = drain_and_send(s, s.previous_cycle_start, heartbeat, 0, false, by, &emptied);
    drained(&s.hold, cycle_start);
    if (sent && (heartbeat || s.events_sent.load(std::memory_order_relaxed) != before)) {
      s.last_sent_cycle = s.cycle;
    }
    if (emptied) s.caught_up_ns.store(cycle_start, std::memory_order_release);
    end = !sent ? RoundEnd::kCannotSend : emptied ? RoundEnd::kEmptied : RoundEnd::kLeftSome;
  }
  if (scan && scan->done.load(std::memory_order_relaxed) != scan_asked) {
    scan->done.store(scan_asked, std::memory_order_release);
    raw_futex_wake_all(&scan->done);
  }
  reclaim_dead_buffers(registry);
  s.previous_cycle_start = cycle_start;
  ++s.cycle;
  return end;
}

void* catch_up(void* arg);
void crash_flush(Sender& s);

void run(Sender* s, std::promise<std::string>* opened) {
  // Named, so that a user looking at their training process's threads (top -H, py-spy)
  // sees which one is memtap's.
  pthread_setname_np(pthread_self(), "memtap-sender");
  if (s->config.untrace_thread) s->config.untrace_thread();
  block_process_signals();
  // The training process comes first: on a machine whose cores the program keeps busy,
  // this thread takes what they leave, like the monitor, and the events wait in the
  // buffers (MEMTAP_BUFFER_MB; dropped and counted past it, or the program waits with
  // MEMTAP_LOSSLESS). At nice 0 it took a third of a core from a two-thread allocation
  // storm on two cores. Nice is per thread on Linux; raising one's own needs no privilege.
  // Only once Hello has gone: until the monitor has heard of a process it cannot hold rows
  // back for it, and at nice 19 on busy cores Hello came a second or more after the start,
  // its first rows then out of time order (many processes starting at once did so in most
  // runs beside a parallel build).
  bool stepped_back = s->config.sender_nice <= 0;
  if (s->deferred) {
    opened->set_value({});  // `opened` is gone once this returns
    if (!wait_for_something_to_send(*s)) return;
    s->deferred = false;
    if (std::string error = open_socket(s); !error.empty()) {
      // It opened before, so this is rare (out of descriptors): said once, as a refusal is.
      s->refused = true;
      if (s->config.refused) s->config.refused(error.c_str());
      return;
    }
  } else {
    std::string error = open_socket(s);
    bool ok = error.empty();
    opened->set_value(std::move(error));  // `opened` is gone once this returns
    if (!ok) return;
  }
  // Batches are lent to ZeroMQ, not copied (send_pending); Hello, Bye and a batch too large
  // for its buffer still are. This namespace's libc (dlmopen gives us our own, so these
  // settings touch nothing of the application's) would map each megabyte-sized block fresh
  // and give it back after use, page-faulting on every one; it keeps them in its heap instead.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  // A second TSC anchor one interval after the first, before anything is converted: the
  // rate then comes from a baseline of milliseconds, not from a guess. (A thread started
  // again after a failed exec has its anchors.)
  if (!s->reopened) {
    wait_interval(*s);  // a stop cuts it short: the final flush converts with what it has
    if (s->config.clock_is_tsc) s->tsc.add_anchor();
  }
  s->previous_cycle_start = monotonic_ns();
  s->caught_up_ns.store(s->previous_cycle_start, std::memory_order_relaxed);
  // Started here, once the socket is open, rather than with this thread: a sender started
  // again after a failed exec that never opens one (an exec per PATH directory) then starts
  // no second thread (a Python spawn with preexec_fn took 12-16 ms longer). This thread has
  // not stepped back yet, so the catch-up thread begins at the program's nice value; without
  // it (no thread to be had) this one does every round.
  s->catch_up_started = pthread_create(&s->catch_up_thread, nullptr, catch_up, s) == 0;
  StarvationWatch starvation;
  while (!stopping(*s)) {
    // While the catch-up thread does the rounds, this one leaves them to it: every round it
    // did would take the lock from it for a batch, at this thread's (slow) pace. Starved
    // (starvation.h), it leaves them too, before the catch-up thread wants the lock: a
    // round it began then held the lock for seconds.
    const bool starved = stepped_back && s->catch_up_started &&
                         starvation.starved(monotonic_ns(), thread_run_delay_ns);
    if (!s->catching_up.load(std::memory_order_acquire) && !starved) {
      std::lock_guard<std::mutex> lock(s->rounds);
      one_round(*s, RoundBy::kSender);
      if (!stepped_back && s->hello_sent) {
        // This thread behind the program (MEMTAP_SENDER_NICE), once Hello is out.
        step_back(0, s->config.sender_nice);
        stepped_back = true;
      }
    }
    wait_interval(*s);
  }
  // An exit or an exec: the thread that asked flushes (stop_and_flush_on_caller), at the program's
  // priority, not this thread's.
  if (!crash_requested(*s)) return;
  // A crash. The catch-up thread, at the program's priority, flushes: this one, at nice 19
  // beside busy cores, got too little of a core to send a backlog within the deadline, and
  // what it had not sent was given up. Woken here at once; should this thread never get a
  // core, it sees the request at its next look anyway.
  if (s->catch_up_started) {
    s->stop_word.store(1, std::memory_order_release);
    raw_futex_wake_all(&s->stop_word);
    return;
  }
  crash_flush(*s);
}

// The final flush a fatal signal asks for: the process dies by the signal once the handler
// sees `done`, and the crashed thread can do nothing, so the socket is flushed and closed
// here, where ZeroMQ writes out what it holds. By the catch-up thread, or by the sender
// thread where there is none; the other thread does no round after its current batch.
void crash_flush(Sender& s) {
  std::lock_guard<std::mutex> lock(s.rounds);
  // By the handler's deadline, which counts from its request: this thread may have come to
  // it late (a look of the catch-up thread, a wait for the lock), and a flush that took its
  // whole time from then on was cut by the handler's end, Bye and all. A tenth (at most
  // 100 ms) is kept for the close and the wake-up. That deadline is the signal's own
  // (MEMTAP_CRASH_FLUSH_MS), or, when the signal came during an exec's flush, that flush's
  // limit, which may be later (agent/crash_flush.cpp).
  uint32_t timeout_ms = std::min(s.config.flush_timeout_ms, s.config.crash_flush_ms);
  const uint64_t deadline = s.config.crash_flush->deadline_ns.load(std::memory_order_relaxed);
  if (deadline != 0) {
    const uint64_t now = monotonic_ns();
    const uint64_t left_ms = deadline > now ? (deadline - now) / 1000000u : 0;
    const uint64_t usable_ms = left_ms - std::min<uint64_t>(left_ms / 10, 100);
    timeout_ms =
        uint32_t(std::max<uint64_t>(1, std::min<uint64_t>(s.config.flush_timeout_ms, usable_ms)));
  }
  int linger = final_flush(s, timeout_ms);
  zmq_setsockopt(s.sock, ZMQ_LINGER, &linger, sizeof linger);
  close_socket(s);
  s.config.crash_flush->done.store(1, std::memory_order_release);
  raw_futex_wake_all(&s.config.crash_flush->done);
}

// Waits up to `ns` for a stop: false once there is one (or a crash flush was asked for).
bool wait_unless_stopped(Sender& s, uint64_t ns) {
  const uint64_t until = monotonic_ns() + ns;
  for (uint64_t now = monotonic_ns(); now < until; now = monotonic_ns()) {
    if (stopping(s)) return false;
    raw_futex_wait(&s.stop_word, 0, until - now);
  }
  return !stopping(s);
}

// The catch-up thread's share of a core while it catches up, as the monitor's threads keep
// theirs (common/cpu_share.h): the minimum while the program's own threads fill every core
// (until kPatienceSeconds behind), half a core against other processes' work, and no
// waiting on a core nobody else wants.
void update_share(CpuShare* share, RecentRunnable* recent, double behind_s) {
  const ProgramThreads threads = program_runnable_threads(uint32_t(getpid()));
  const int cpus = usable_cpus();
  const int cores_full =
      recent->look(threads.program, threads.agent, machine_runnable_threads(), cpus);
  share->permille.store(share_while_running(CpuShare::kMinPermille, behind_s, recent->program(),
                                            recent->others(), cpus),
                        std::memory_order_relaxed);
  share->cores_full.store(cores_full, std::memory_order_relaxed);
}

// The catch-up thread's part in App Reserved (memory_sampler.h): a reading the rounds have
// left undone half an interval past due (their thread held off its core, a held round, a
// round that waits for ZeroMQ) it takes itself, and while the last one was its own it looks
// again half an interval after the next is due. Otherwise the rounds take them, as they
// drain, and this thread keeps to `look_ns`: woken every 10 ms, it cost the program 0.7 %
// of a core on this project's VM for what the rounds did anyway. Returns how long it may
// wait before it looks again.
uint64_t sample_if_rounds_do_not(Sender& s, uint64_t look_ns) {
  MemorySampler& sampler = *s.sampler;
  const int64_t half = int64_t(sampler.interval_ns() / 2);
  const uint64_t now = monotonic_ns();
  if (sampler.since_due_ns(now) >= half) sampler.sample_when_due(now, MemorySampler::By::kCatchUp);
  if (!sampler.last_taken_by_catch_up()) return look_ns;
  const int64_t wait = half - sampler.since_due_ns(now);
  return std::clamp<uint64_t>(uint64_t(std::max<int64_t>(wait, 0)), kMinSampleWaitNs, look_ns);
}

// Waits while `pacer` says this thread is over its share, in steps of a look (`look`), so
// that a share that changes meanwhile changes the wait. False once there is a stop.
template <typename Look>
bool pay_what_is_owed(Sender& s, CpuPacer& pacer, Look look) {
  for (;;) {
    const int64_t owed = pacer.owed_wait_ns(monotonic_ns(), thread_cpu_ns(), pacer.busy_probe());
    if (owed <= 0) return true;
    const uint64_t sample_ns = sample_if_rounds_do_not(s, kShareLookNs);
    if (!wait_unless_stopped(s, std::min({uint64_t(owed), kShareLookNs, sample_ns}))) {
      return false;
    }
    look();
  }
}

// A dlclose waits for a round to report the modules before it unloads them, at most
// kModuleScanWaitNs (200 ms), and a sender thread held off its core (nice 19 beside busy
// cores) often took longer. The program then loaded another library at the same address,
// used it and unloaded it before any round scanned: that library was never reported, and
// its stacks were named after the one before it (4 busy loops: 3 runs of 20). So the
// catch-up thread answers a scan asked and unanswered at its next look, without its grace.
bool scan_unanswered(const Sender& s) {
  const ModuleScanWords* scan = s.config.module_scan;
  return scan && scan->requested.load(std::memory_order_acquire) !=
                     scan->done.load(std::memory_order_acquire);
}

// The catch-up thread. The sender thread runs behind the program (nice 19): beside other
// busy processes it gets about 1.5 % of a core, and a PyTorch rank's sender fell more than
// 10 s behind; the monitor then stopped waiting for it, applied its rows late, and at exit
// the whole backlog went in the final flush. A nice value cannot be lowered again without
// privilege, so this thread stays at the program's and waits. Once the last round that left
// nothing waiting began longer ago than the grace, it takes the rounds over, a batch at a
// time, keeping to a share of a core (update_share), until nothing waits; the sender thread
// then has them back. A paced sender at nice 0 all the time cost a one-thread allocation
// storm half its time again (bench/HISTORY.md): this one runs only past the grace, or for a
// dlclose that waits (scan_unanswered). It also reads the resident set for App Reserved
// when the rounds do not (sample_if_rounds_do_not).
void* catch_up(void* arg) {
  Sender* s = static_cast<Sender*>(arg);
  pthread_setname_np(pthread_self(), "memtap-catchup");
  if (s->config.untrace_thread) s->config.untrace_thread();
  block_process_signals();
  const uint64_t grace_ns = kCatchUpGraceNs + s->hold.hold_ns;
  CpuShare share;
  share.limited.store(true, std::memory_order_relaxed);
  CpuPacer pacer(&share);
  RecentRunnable recent;
  for (uint64_t wait_ns = kCatchUpLookNs; wait_unless_stopped(*s, wait_ns);) {
    wait_ns = sample_if_rounds_do_not(*s, kCatchUpLookNs);
    const uint64_t behind_ns = monotonic_ns() - s->caught_up_ns.load(std::memory_order_acquire);
    if (behind_ns < grace_ns && !scan_unanswered(*s)) continue;
    s->catching_up.store(true, std::memory_order_release);
    pacer.owed_wait_ns(monotonic_ns(), thread_cpu_ns(),
                       [] { return false; });  // starts the account
    uint64_t next_look = 0;
    auto look_when_due = [&] {
      const uint64_t now = monotonic_ns();
      if (now < next_look) return;
      const uint64_t since = now - s->caught_up_ns.load(std::memory_order_relaxed);
      update_share(&share, &recent, double(since) / 1e9);
      next_look = now + kShareLookNs;
    };
    for (bool more = true; more;) {
      look_when_due();
      {
        std::lock_guard<std::mutex> lock(s->rounds);
        if (stopping(*s)) break;
        more = one_round(*s, RoundBy::kCatchUp) == RoundEnd::kLeftSome;
      }
      // What the round owes is waited out a look at a time, at the share each look sets: a
      // share seen at its minimum once (a rank's own threads filled the cores during an
      // all-reduce), kept for the whole wait, put the thread to sleep for 4-9 s.
      if (!pay_what_is_owed(*s, pacer, look_when_due)) break;
    }
    s->catching_up.store(false, std::memory_order_release);
  }
  if (crash_requested(*s)) crash_flush(*s);
  return nullptr;
}

// Stops the sender thread and does the final flush on the calling thread. The sender thread
// runs behind the program (nice 19), which beside busy cores made an exiting program wait
// seconds for its own flush; the thread that exits (or execs) runs at the program's
// priority. The socket passes to it with the join, which ZeroMQ allows with a full barrier.
void stop_and_flush_on_caller(Sender* s) {
  s->stop_requested.store(true, std::memory_order_release);
  // Cuts the drain-interval wait short (wait_interval), and the catch-up thread's waits.
  if (s->config.crash_flush) raw_futex_wake_all(&s->config.crash_flush->requested);
  s->stop_word.store(1, std::memory_order_release);
  raw_futex_wake_all(&s->stop_word);
  s->thread.join();
  if (s->catch_up_started) {
    pthread_join(s->catch_up_thread, nullptr);
    s->catch_up_started = false;
  }
  if (s->closed) return;  // a crash flush ran on the thread meanwhile
  if (!s->sock) {
    // Stopped while it waited to open again after a failed exec. Before another exec with
    // nothing new, there is nothing to open it for; otherwise it opens here.
    if (s->refused || (s->exec_flush && !something_to_send(*s))) {
      s->closed = true;
      return;
    }
    s->deferred = false;
    if (!open_socket(s).empty()) {
      s->closed = true;
      return;
    }
  }
  int linger = final_flush(*s, s->config.flush_timeout_ms);
  zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof linger);
}

// Starts the thread, which opens the socket; the error text, empty on success.
std::string start_thread(Sender* s) {
  std::promise<std::string> opened;
  std::future<std::string> result = opened.get_future();
  s->thread = std::thread(run, s, &opened);
  std::string error = result.get();
  if (!error.empty()) {
    s->thread.join();
    return error;
  }
  return error;
}

void set_error(char* error, size_t len, const std::string& text) {
  if (len == 0) return;
  snprintf(error, len, "%s", text.c_str());
}

}  // namespace
}  // namespace memtap

using memtap::g_sender;

extern "C" __attribute__((visibility("default"))) int memtap_sender_start(
    const MemtapSenderConfig* config, char* error, size_t error_len) {
  using namespace memtap;
  if (!config || config->abi_version != kSenderAbiVersion) {
    set_error(error, error_len, "sender ABI version mismatch");
    return -1;
  }
  if (g_sender) {
    set_error(error, error_len, "sender already started");
    return -1;
  }
  auto* s = new Sender;
  s->config = *config;
  s->endpoint = config->endpoint ? config->endpoint : "";
  s->hostname = config->hostname ? config->hostname : "";
  s->cmdline.assign(config->cmdline ? config->cmdline : "", config->cmdline_len);
  s->agent_version = config->agent_version ? config->agent_version : "";
  s->config.endpoint = s->endpoint.c_str();
  s->config.hostname = s->hostname.c_str();
  s->config.cmdline = s->cmdline.data();
  s->config.agent_version = s->agent_version.c_str();
  if (config->curve_secret_key) {
    s->curve_server_key = config->curve_server_key ? config->curve_server_key : "";
    s->curve_public_key = config->curve_public_key ? config->curve_public_key : "";
    s->curve_secret_key = config->curve_secret_key;
  }
  s->config.curve_server_key = s->config.curve_public_key = s->config.curve_secret_key = nullptr;

  resolve_thread_functions();
  mark_sender_fds_in(config->sender_fds);
  if (s->config.clock_is_tsc) s->tsc.add_anchor();
  s->sampler = std::make_unique<MemorySampler>(config->rss_interval_ms);
  s->hold.hold_ns = uint64_t(config->hold_ms) * 1'000'000;
  s->hold.last_drain_ns = monotonic_ns();
  if (std::string open_error = start_thread(s); !open_error.empty()) {
    set_error(error, error_len, open_error);
    return -1;
  }
  g_sender = s;
  s->running = true;
  return 0;
}

extern "C" __attribute__((visibility("default"))) void memtap_sender_stop(int32_t end,
                                                                          int32_t code) {
  memtap::Sender* s = g_sender;
  if (!s || !s->running.exchange(false)) return;
  s->end = end;
  s->end_code = code;
  memtap::stop_and_flush_on_caller(s);
  if (!s->closed) close_socket(*s);
}

extern "C" __attribute__((visibility("default"))) int memtap_sender_exec(
    int32_t phase, MemtapExecHandoff* handoff) {
  memtap::Sender* s = g_sender;
  if (!s) return -1;
  if (phase == kMemtapExecBefore) {
    // No socket (waiting to open again after a failed exec): no descriptor of ZeroMQ's to
    // lose. The thread may open one meanwhile; it is stopped below before it is looked at.
    if (s->sock_open.load(std::memory_order_acquire) && !memtap::descriptors_intact(*s)) return 0;
    if (!s->running.exchange(false)) return 0;
    s->exec_flush = true;
    s->exec_hands_off = handoff != nullptr;
    memtap::stop_and_flush_on_caller(s);
    // A message ZeroMQ did not take is given up, as at a disconnection: its sequence number
    // goes to the next message, on the next socket if exec fails.
    memtap::give_up_pending(*s);
    if (!s->closed) memtap::close_socket(*s);  // linger: what ZeroMQ took is written here
    s->dropped_at_exec = memtap::total_dropped(*s);
    if (handoff) {
      handoff->instance_id = s->config.instance_id;
      handoff->events_sent = s->events_sent.load();
      handoff->dropped_total = s->dropped_at_exec;
      handoff->instance_secret = s->config.instance_secret;
      handoff->said = 1;
    }
    return 1;
  }
  // exec failed: the same instance goes on, on a new socket. Its first message says so, so
  // that the monitor waits for what may still come over the old one (PULL takes connections
  // in turn, not in the order they were made).
  if (s->running.load() || memtap::crash_requested(*s)) return -1;
  s->connected = false;
  s->closed = false;
  s->exec_flush = false;
  s->reopened = true;
  s->deferred = true;
  s->stop_requested.store(false, std::memory_order_relaxed);
  s->stop_word.store(0, std::memory_order_relaxed);
  if (!memtap::start_thread(s).empty()) return -1;
  s->running = true;
  return 0;
}

extern "C" __attribute__((visibility("default"))) uint64_t memtap_sender_events_sent(void) {
  return g_sender ? g_sender->events_sent.load() : 0;
}
