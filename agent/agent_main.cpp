// The agent's lifecycle: start-up (constructor), fork(), and the final flush at exit (or
// on a fatal signal: crash_flush.cpp).
//
// Settings come from the environment that `memtap run` (or the user) sets:
//   MEMTAP_ENDPOINT          where the monitor listens (default: the per-user IPC socket)
//   MEMTAP_DISABLE=1         load but record nothing
//   MEMTAP_LOSSLESS=1        the application waits when buffers are full instead of dropping
//   MEMTAP_BUFFER_MB         bound on buffered events (default 256 MiB)
//   MEMTAP_STRING_MB         bound on interned text, index included (default 64 MiB)
//   MEMTAP_FLUSH_TIMEOUT_MS  the most the final flush may delay exit (default 10000)
//   MEMTAP_CONNECT_TIMEOUT_MS  at exit, how long to wait for a monitor never reached (1000)
//   MEMTAP_CRASH_FLUSH_MS    on SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM or SIGINT
//                            the most the final flush may delay the signal (2000; 0: no
//                            handlers)
//   MEMTAP_DRAIN_INTERVAL_US   how often the sender drains the buffers (default 2000)
//   MEMTAP_RSS_INTERVAL_MS     how often memtap samples the resident set (10; 0: never)
//   MEMTAP_SENDER_NICE         the sender thread's nice value (default 19; 0: the program's)
//   MEMTAP_HOLD_MS             the longest the sender leaves events in the buffers while the
//                              program's threads fill every core (default 200; 0: never;
//                              agent/sender/drain_hold.h)
//   MEMTAP_KEYS                a key directory (memtap keygen): agent.key, agent.pub and
//                              monitor.pub; the connection is authenticated and encrypted
//                              with ZeroMQ CURVE (common/curve_keys.h)
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "agent/agent_state.h"
#include "agent/async_signals.h"
#include "agent/crash_flush.h"
#include "agent/event_buffer_writer.h"
#include "agent/event_clock.h"
#include "agent/exec_handoff.h"
#include "agent/memtap.h"
#include "agent/module_unload.h"
#include "agent/process_identity.h"
#include "agent/raw_syscalls.h"
#include "agent/real_functions.h"
#include "agent/sender_loader.h"
#include "agent/stacks.h"
#include "agent/string_log.h"
#include "common/clock.h"
#include "common/curve_keys.h"
#include "common/socket_dir.h"
#include "common/thread_nice.h"

namespace memtap {

AgentState g_agent;
// Read by every hook; see event_clock.h.
bool g_clock_is_tsc = false;
uint64_t g_trace_start = 0;
__thread int tl_agent_busy __attribute__((tls_model("initial-exec"))) = 0;

namespace {

// Settings read once at start-up and kept for fork() children. Global for the same
// reason as g_agent: the fork hook has no other way to reach them.
struct Settings {
  char endpoint[4096];
  uint32_t flush_timeout_ms = 10000;
  uint32_t connect_timeout_ms = 1000;
  uint32_t crash_flush_ms = 2000;
  uint32_t drain_interval_us = 2000;
  uint32_t rss_interval_ms = 10;
  uint32_t hold_ms = 200;
  int32_t sender_nice = kBehindTheProgramNice;
  // MEMTAP_KEYS: Z85 keys, NUL-terminated; empty without CURVE.
  char monitor_public_key[kZ85KeyChars + 1];
  char agent_public_key[kZ85KeyChars + 1];
  char agent_secret_key[kZ85KeyChars + 1];
};
Settings g_settings;
ProcessIdentity g_identity;

struct BusyScope {
  BusyScope() { ++tl_agent_busy; }
  ~BusyScope() { --tl_agent_busy; }
};

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  char* end;
  unsigned long long n = strtoull(v, &end, 10);
  return *end ? fallback : n;
}

// One write(2), no stdio: the sender calls it too (MemtapSenderConfig::warn, refused), from
// its own thread and, after a crash, while the crashed thread may hold stderr's lock.
void warn(const char* what) {
  char line[1024];
  const int n = snprintf(line, sizeof line, "memtap agent (pid %u): %s\n", raw_getpid(), what);
  if (n > 0) syscall(SYS_write, 2, line, std::min<size_t>(size_t(n), sizeof line - 1));
}

// Reads the key in `dir`/`name` into `key` (kZ85KeyChars + 1 bytes). A secret key's file
// must be the user's alone: anyone who can read it can pass for this agent. Warns, naming
// the file, and returns false otherwise. No allocation: plain system calls into buffers.
bool read_key(const char* dir, const char* name, bool secret, char* key) {
  char path[4096], line[4400];
  if (size_t(snprintf(path, sizeof path, "%s/%s", dir, name)) >= sizeof path) {
    warn("MEMTAP_KEYS: the key directory's path is too long; memory events are not recorded");
    return false;
  }
  const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(line, sizeof line, "MEMTAP_KEYS: cannot read %s: %s; memory events are not recorded",
             path, fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    warn(line);
    return false;
  }
  if (secret && (st.st_mode & 077) != 0) {
    close(fd);
    snprintf(line, sizeof line,
             "MEMTAP_KEYS: secret key %s is open to other users (mode %04o; expected 0600); "
             "memory events are not recorded",
             path, unsigned(st.st_mode & 07777));
    warn(line);
    return false;
  }
  char text[128];
  const ssize_t n = read(fd, text, sizeof text);
  close(fd);
  if (n <= 0 || z85_key_length(text, size_t(n)) == 0) {
    snprintf(line, sizeof line,
             "MEMTAP_KEYS: %s is not a CURVE key (expected 40 Z85 characters, as memtap keygen "
             "writes them); memory events are not recorded",
             path);
    warn(line);
    return false;
  }
  memcpy(key, text, kZ85KeyChars);
  key[kZ85KeyChars] = 0;
  return true;
}

// MEMTAP_KEYS's three keys into g_settings; false (with a warning) if any is unusable.
bool read_keys(const char* dir) {
  return read_key(dir, kMonitorPublicKeyFile, false, g_settings.monitor_public_key) &&
         read_key(dir, kAgentPublicKeyFile, false, g_settings.agent_public_key) &&
         read_key(dir, kAgentSecretKeyFile, true, g_settings.agent_secret_key);
}

// The sender thread's, for good (MemtapSenderConfig::untrace_thread).
void untrace_calling_thread() {
  ++tl_agent_busy;
  crash_flush_set_sender_thread(raw_gettid());
}

// The monitor refused this agent's keys (or their absence): nothing would ever drain the
// buffers, so the hooks stop recording. Called once, on the sender thread.
void refused_by_monitor(const char* why) {
  g_agent.recording.store(false, std::memory_order_relaxed);
  char line[700];
  snprintf(line, sizeof line, "%s; memory events are not recorded", why);
  warn(line);
}

// MemtapSenderConfig::iterate_modules. A function of the agent's, so that glibc, which lists
// the namespace its caller lies in, lists the program's objects: the sender calls it from its
// own namespace. Not a tail call: glibc looks at its return address, which must lie here.
int iterate_program_modules(int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  int rc = dl_iterate_phdr(callback, data);
  asm volatile("" ::: "memory");
  return rc;
}

// `execed_from`: the image this one replaced by exec (said == 0: none).
void start_sender(uint32_t forked_from_pid, const MemtapExecHandoff& execed_from) {
  read_process_identity(&g_identity);
  g_agent.registry.pid = g_identity.pid;
  MemtapSenderConfig c{};
  c.abi_version = kSenderAbiVersion;
  c.registry = &g_agent.registry;
  c.strings = &g_string_log;
  c.endpoint = g_settings.endpoint;
  c.pid = g_identity.pid;
  c.ppid = g_identity.ppid;
  c.forked_from_pid = forked_from_pid;
  c.instance_id = g_identity.instance_id;
  c.instance_secret = g_identity.instance_secret;
  c.hostname = g_identity.hostname;
  c.cmdline = g_identity.cmdline;
  c.cmdline_len = g_identity.cmdline_len;
  c.rank = g_identity.rank;
  c.world_size = g_identity.world_size;
  c.clock_monotonic_ns = monotonic_ns();
  c.clock_realtime_ns = realtime_ns();
  c.drain_interval_us = g_settings.drain_interval_us;
  c.flush_timeout_ms = g_settings.flush_timeout_ms;
  c.connect_timeout_ms = g_settings.connect_timeout_ms;
  c.agent_version = memtap_agent_version();
  c.clock_is_tsc = g_clock_is_tsc;
  c.rss_interval_ms = g_settings.rss_interval_ms;
  c.hold_ms = g_settings.hold_ms;
  c.sender_nice = g_settings.sender_nice;
  c.untrace_thread = untrace_calling_thread;
  c.crash_flush = &g_crash_flush;
  c.crash_flush_ms = g_settings.crash_flush_ms;
  if (g_settings.agent_secret_key[0]) {
    c.curve_server_key = g_settings.monitor_public_key;
    c.curve_public_key = g_settings.agent_public_key;
    c.curve_secret_key = g_settings.agent_secret_key;
  }
  c.refused = refused_by_monitor;
  c.sender_fds = &g_agent.sender_fds;
  c.warn = warn;
  c.execed_from = execed_from;
  // The modules only name C stacks' addresses: without C stacks the sender never lists them.
  const bool c_stacks = stack_settings_from_env().c;
  c.iterate_modules = c_stacks ? iterate_program_modules : nullptr;
  c.module_scan = &g_module_scan;
  // A fork() child records from the fork on: its Hello's time is its start.
  c.trace_start = forked_from_pid ? 0 : g_trace_start;
  // The process has threads from now on that this (the program's) libc did not create: the
  // sender's libc did. Left believing it is single-threaded, libc takes its locks with plain
  // stores and its malloc takes no lock at all, and the sender's threads do share both: the
  // loader's lock (dl_iterate_phdr for the modules, dlsym: a lock released without waking
  // the sender waiting on it, seen as hangs at exit), and the program's malloc, which the
  // loader calls for the TLS of every thread the sender's namespace starts and of every
  // module there a thread first touches (a heap raced from two threads unlocked). So it
  // learns what glibc would have told it had it made the threads itself; a fork() child's
  // libc believes itself single-threaded again, and comes here again. The price, for a
  // program that never starts a thread of its own, is a lock in each malloc and atomic
  // reference counts (storm and hot path within the benchmarks' noise).
  __libc_single_threaded = 0;
  char error[512];
  {
    AsyncSignalsHeld held;  // until the sender runs
    g_agent.sender_stop = load_and_start_sender(c, &g_agent.sender_exec, error, sizeof error);
  }
  if (!g_agent.sender_stop) {
    // Nothing would ever drain the buffers: stop recording rather than fill memory.
    g_agent.recording.store(false, std::memory_order_relaxed);
    char line[700];
    snprintf(line, sizeof line, "%s; memory events are not recorded", error);
    warn(line);
  }
}

// on_exit, not atexit: it is handed the status exit() got (a return from main included),
// which Bye carries.
void at_exit_flush(int status, void*) {
  agent_stop(ProcessEnd::kExited, status & 0xff);
}

__attribute__((constructor)) void agent_init() {
  BusyScope busy;
  resolve_real_functions();
  // Taken out of the environment whatever follows, before the program can see it.
  const MemtapExecHandoff execed_from = take_exec_handoff(raw_getpid());
  if (env_u64("MEMTAP_DISABLE", 0) != 0) {
    g_agent.recording.store(false, std::memory_order_relaxed);
    return;
  }
  g_agent.lossless = env_u64("MEMTAP_LOSSLESS", 0) != 0;
  g_agent.registry.byte_limit = env_u64("MEMTAP_BUFFER_MB", 256) << 20;
  string_log_set_limit(env_u64("MEMTAP_STRING_MB", 64) << 20);
  g_settings.flush_timeout_ms = uint32_t(env_u64("MEMTAP_FLUSH_TIMEOUT_MS", 10000));
  g_settings.connect_timeout_ms = uint32_t(env_u64("MEMTAP_CONNECT_TIMEOUT_MS", 1000));
  g_settings.crash_flush_ms = uint32_t(env_u64("MEMTAP_CRASH_FLUSH_MS", 2000));
  g_settings.drain_interval_us = uint32_t(env_u64("MEMTAP_DRAIN_INTERVAL_US", 2000));
  g_settings.rss_interval_ms = uint32_t(env_u64("MEMTAP_RSS_INTERVAL_MS", 10));
  g_settings.hold_ms = uint32_t(std::min<uint64_t>(env_u64("MEMTAP_HOLD_MS", 200), 10'000));
  g_settings.sender_nice =
      int32_t(std::min<uint64_t>(env_u64("MEMTAP_SENDER_NICE", kBehindTheProgramNice), 19));
  const char* ep = getenv("MEMTAP_ENDPOINT");
  if (ep && *ep) {
    snprintf(g_settings.endpoint, sizeof g_settings.endpoint, "%s", ep);
  } else {
    char dir[3000];
    user_socket_dir_path(dir, sizeof dir);
    snprintf(g_settings.endpoint, sizeof g_settings.endpoint, "ipc://%s/%s.sock", dir,
             kDefaultSocketName);
  }
  const char* keys = getenv("MEMTAP_KEYS");
  if (keys && *keys && !read_keys(keys)) {
    // Without its keys the agent cannot be let in: stream nothing, rather than try in vain
    // or fall back to a connection without them.
    g_agent.recording.store(false, std::memory_order_relaxed);
    return;
  }
  buffer_retire_at_thread_exit();
  start_sender(0, execed_from);
  // Inherited by fork() children, whose own sender takes over g_crash_flush.
  if (g_agent.sender_stop) crash_flush_install(g_settings.crash_flush_ms);
  // An exit handler, not a destructor: _dl_fini finalises the sender's namespace (ZeroMQ,
  // libstdc++) before the base namespace's destructors would run.
  on_exit(at_exit_flush, nullptr);
}

}  // namespace

void agent_stop(ProcessEnd end, int32_t code) {
  // A vfork() child shares our memory but is another process: it must not touch the
  // parent's sender.
  if (g_agent.registry.pid != 0 && raw_getpid() != g_agent.registry.pid) return;
  // The process is ending: an asynchronous signal taken on this thread from here on (a
  // pool's SIGTERM to a worker in _exit) comes too late to end it first, and is left blocked
  // (not restored: exit ends the process). One taken on another thread waits for the flush
  // (wait_for_final_flush).
  hold_async_signals();
  if (g_agent.stopped.exchange(true)) {
    wait_for_final_flush();  // a fatal signal's, on another thread
    return;
  }
  BusyScope busy;
  final_flush_begin(g_settings.flush_timeout_ms);
  if (g_agent.sender_stop) g_agent.sender_stop(int32_t(end), code);
  g_agent.recording.store(false, std::memory_order_relaxed);
  final_flush_end();
}

bool agent_before_exec(char* handoff_entry, size_t len) {
  if (len > 0) handoff_entry[0] = 0;
  // As agent_stop: never in a vfork() child, nor in a fork() child without a sender of its
  // own (its registry still names the parent). Nor on the agent's own threads.
  if (g_agent.registry.pid == 0 || raw_getpid() != g_agent.registry.pid) return false;
  if (tl_agent_busy != 0) return false;
  // A fatal signal's flush under way on another thread: the process ends by that signal.
  wait_for_a_fatal_signal_before_exec(false);
  if (!g_agent.sender_exec || g_agent.stopped.load()) return false;
  BusyScope busy;
  // A signal taken on this thread waits until the flush is done, as at exit (agent_stop):
  // its handler would ask the sender thread for a flush, and once the flush has stopped that
  // thread nobody answers; the flush it interrupted was then cut short (a pool's SIGTERM to a
  // worker that execs: "no final flush", its last events lost). Taken once the mask is back,
  // the signal ends the process with everything sent.
  AsyncSignalsHeld held;
  MemtapExecHandoff handoff{};
  exec_flush_begin(g_settings.flush_timeout_ms);
  const bool flushed = g_agent.sender_exec(kMemtapExecBefore, &handoff) == 1;
  g_agent.exec_flushed.store(flushed, std::memory_order_seq_cst);
  // A fatal signal on another thread meanwhile waits for this flush (crash_flush.h); after
  // a flush, never returns if there is one.
  if (flushed) wait_for_a_fatal_signal_before_exec(true);
  exec_flush_end();
  if (flushed && handoff.said &&
      !format_exec_handoff(g_identity.pid, handoff, handoff_entry, len)) {
    if (len > 0) handoff_entry[0] = 0;
  }
  return flushed;
}

void agent_after_failed_exec() {
  BusyScope busy;
  const bool resumed = g_agent.sender_exec(kMemtapExecFailed, nullptr) == 0;
  g_agent.exec_flushed.store(false, std::memory_order_release);
  if (resumed) return;
  g_agent.recording.store(false, std::memory_order_relaxed);
  warn("cannot reopen the connection after a failed exec; memory events are no longer recorded");
}

void agent_after_fork_parent(uint32_t child_pid, uint64_t fork_ts_ns) {
  if (!hooks_record()) return;
  record_event(&g_agent.registry, g_agent.lossless, EventKind::kFork, child_pid, 0, fork_ts_ns);
  uint32_t i = g_agent.registry.child_count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxChildPids) g_agent.registry.child_pids[i] = child_pid;
}

void agent_after_fork_child(uint32_t parent_pid) {
  if (!g_agent.sender_stop || g_agent.stopped.load()) return;  // the parent was not streaming
  BusyScope busy;
  // The parent's namespace's descriptors are dead copies here, the program's to close.
  g_agent.sender_fds.clear_all();
  registry_reset_after_fork(&g_agent.registry, raw_getpid());
  // The child keeps its parent's string ids; its new sender sends every text again.
  string_log_after_fork_child();
  context_after_fork_child();
  crash_flush_after_fork_child();
  start_sender(parent_pid, MemtapExecHandoff{});
}

}  // namespace memtap

extern "C" __attribute__((visibility("default"))) const char* memtap_agent_version(void) {
  return MEMTAP_VERSION;
}

extern "C" __attribute__((visibility("default"))) int memtap_agent_active(void) {
  return memtap::g_agent.recording.load(std::memory_order_relaxed) ? 1 : 0;
}
