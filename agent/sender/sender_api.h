// The C interface between the preloaded agent and its sender library.
//
// The sender (ZeroMQ, Cap'n Proto, libstdc++) is loaded with dlmopen into a link
// namespace of its own, so none of it enters the application's symbol scope and its own
// allocations and threads go through that namespace's libc, never through our hooks. The
// two sides share only this struct, the buffer registry, the string log and plain C calls.
#pragma once

#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "agent/event_buffer.h"
#include "agent/string_log.h"

namespace memtap {

// A fatal signal's call for the final flush and the sender's answer (agent/crash_flush.cpp).
// Futex words: the handler wakes the sender's drain-interval wait on `requested` and waits
// on `done` up to its deadline.
struct CrashFlushWords {
  std::atomic<uint32_t> requested{0};  // the crash handler asks for the final flush now
  std::atomic<uint32_t> done{0};       // the sender has sent Bye and closed its socket
  std::atomic<int32_t> signal{0};      // the fatal signal, for Bye's end (set before requested)
  // When the handler stops waiting for `done` (monotonic ns; set before requested): the
  // flush, begun a while after the request, must end by then, not a deadline later.
  std::atomic<uint64_t> deadline_ns{0};
};

// A dlclose's call for a module scan and the sender's answer (agent/module_unload.h).
// Tickets: the sender answers with the last `requested` it read before a drain round.
struct ModuleScanWords {
  std::atomic<uint32_t> requested{0};
  std::atomic<uint32_t> done{0};  // futex word: the dlclose waits on it
};

// The descriptors the sender's namespace holds open (ZeroMQ's sockets, eventfds and epoll
// instances), one bit each, for the agent's close() hook (agent/hooks/exec_hooks.cpp): a
// program that closes descriptors one at a time (a loop before exec, a daemon) would pull
// them from under ZeroMQ's threads, and ZeroMQ aborts the process on a descriptor that is
// gone. agent/sender/sender_fds.cpp sets and clears the bits as the namespace opens and
// closes them. Descriptors from kSenderFdLimit up are not tracked.
constexpr int kSenderFdLimit = 4096;
struct SenderFds {
  std::atomic<uint64_t> words[kSenderFdLimit / 64]{};

  bool holds(int fd) const {
    return unsigned(fd) < unsigned(kSenderFdLimit) &&
           ((words[fd >> 6].load(std::memory_order_relaxed) >> (fd & 63)) & 1) != 0;
  }
  void set(int fd, bool held) {
    if (unsigned(fd) >= unsigned(kSenderFdLimit)) return;
    const uint64_t bit = uint64_t{1} << (fd & 63);
    if (held) {
      words[fd >> 6].fetch_or(bit, std::memory_order_relaxed);
    } else {
      words[fd >> 6].fetch_and(~bit, std::memory_order_relaxed);
    }
  }
  void clear_all() {
    for (auto& w : words) w.store(0, std::memory_order_relaxed);
  }
};

}  // namespace memtap

extern "C" {

// 8: 16-byte slots; 9: untrace_thread; 10: 8-byte slots; 11: crash flush; 12: stop's end;
// 13: memtap_sender_exec; 14: CURVE keys, refused; 15: instance_secret; 16: iterate_modules,
// module_scan; 17: hold_ms; 18: sender_fds; 19: warn; 20: exec handoff
constexpr uint32_t kSenderAbiVersion = 20;

// What an instance that ends in exec() had handed to the wire and dropped: its Bye's
// numbers, which it cannot send (Hello.execedFrom, agent/exec_handoff.h).
struct MemtapExecHandoff {
  uint64_t instance_id;
  uint64_t events_sent;
  uint64_t dropped_total;
  uint64_t instance_secret;  // the old instance's: the monitor takes its word only with it
  int said;                  // 0: none (the first image, or the old one's word did not come)
};

struct MemtapSenderConfig {
  uint32_t abi_version;
  memtap::BufferRegistry* registry;
  const memtap::StringLog* strings;  // interned text; the agent's, read-only here
  const char* endpoint;
  uint32_t pid;
  uint32_t ppid;
  uint32_t forked_from_pid;
  uint64_t instance_id;
  uint64_t instance_secret;  // Message.instanceSecret: never logged or written anywhere
  const char* hostname;
  const char* cmdline;  // NUL-separated arguments, as in /proc/self/cmdline
  size_t cmdline_len;
  int32_t rank;
  int32_t world_size;
  uint64_t clock_monotonic_ns;  // read back to back with clock_realtime_ns
  uint64_t clock_realtime_ns;
  uint32_t drain_interval_us;
  uint32_t flush_timeout_ms;    // the most the final flush may delay process exit
  uint32_t connect_timeout_ms;  // how long to wait at exit for a monitor never reached
  const char* agent_version;
  uint64_t trace_start;  // clock reading (TSC or ns, as records) of the first hook call; 0: none
  int clock_is_tsc;      // records carry TSC ticks, to be converted (agent/event_clock.h)
  uint32_t rss_interval_ms;  // memory (RSS) samples for App Reserved; 0: none
  int32_t sender_nice;       // the sender thread's nice value; <= 0: the program's own
  // Called first on the sender thread: from then on the agent records nothing this thread
  // allocates through the program's malloc. The sender's own allocations never go there,
  // but ld.so's do: the TLS of every thread the sender starts (ZeroMQ's) comes from the
  // program's malloc, in the thread that calls pthread_create.
  void (*untrace_thread)(void);
  // The crash handler's words (in the agent), and the most the final flush may take then.
  memtap::CrashFlushWords* crash_flush;
  uint32_t crash_flush_ms;
  // MEMTAP_KEYS, as Z85 text: the monitor's public key and the agent's pair. nullptr: no
  // CURVE (the monitor must not ask for it).
  const char* curve_server_key;
  const char* curve_public_key;
  const char* curve_secret_key;
  // Called once, on the sender thread, when the monitor refuses the connection's security
  // (its keys, or the lack of them): the sender stops trying; the agent stops recording.
  void (*refused)(const char* why);
  // The program's loaded objects, as dl_iterate_phdr lists them, for Batch.modules. The
  // agent's, not the sender's own dl_iterate_phdr: glibc lists the namespace of the code that
  // calls it, and the sender's namespace holds only its private libraries. nullptr: none.
  int (*iterate_modules)(int (*callback)(struct dl_phdr_info* info, size_t size, void* data),
                         void* data);
  // A dlclose's wait for the next round's module scan; nullptr: none.
  memtap::ModuleScanWords* module_scan;
  // The longest the sender leaves records in the buffers while the program's threads fill
  // every core (drain_hold.h); 0: it drains every round.
  uint32_t hold_ms;
  // Where the namespace marks the descriptors it holds (the agent's); nullptr: nowhere.
  memtap::SenderFds* sender_fds;
  // Writes one line to the program's stderr, as the agent's own messages go (the final
  // flush that gives events up says so). nullptr: nothing is said.
  void (*warn)(const char* what);
  // The image this one replaced by exec(), for Hello.execedFrom; said == 0: none.
  MemtapExecHandoff execed_from;
};

// Starts the sender thread. Returns 0, or -1 with a message in error.
typedef int (*memtap_sender_start_fn)(const MemtapSenderConfig* config, char* error,
                                      size_t error_len);
// Drains every buffer, sends Bye and closes, within flush_timeout_ms. Idempotent. `end`
// (a memtap::ProcessEnd) and `code` are Bye's: how the process is ending.
typedef void (*memtap_sender_stop_fn)(int32_t end, int32_t code);
// Around exec(). kMemtapExecBefore: drains every buffer, sends it and closes the socket
// with linger, so that ZeroMQ has written everything when it returns; no Bye (the new
// image's Hello ends this instance at the monitor, and says what `handoff` says: what this
// instance sent and dropped, the records the flush could not send in time given up and
// counted). `handoff` nullptr: no exec, but the program closing the sender's descriptors
// (agent/hooks/exec_hooks.cpp); what the flush cannot send in time then stays in the buffers
// for the sender to send when it comes back. Returns 1, or 0 when the sender was not running
// (`handoff` untouched).
// kMemtapExecFailed, after exec returned (`handoff` unused): the same sender goes on (same
// instance, sequence continuing) on a new socket, opened once there is something to send
// (another exec at once, as in a PATH search, then finds nothing to flush); 0, or -1 if it
// could not.
constexpr int32_t kMemtapExecBefore = 0;
constexpr int32_t kMemtapExecFailed = 1;
typedef int (*memtap_sender_exec_fn)(int32_t phase, MemtapExecHandoff* handoff);
// Events handed to ZeroMQ so far.
typedef uint64_t (*memtap_sender_events_sent_fn)(void);
}
