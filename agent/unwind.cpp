// See unwind.h. A frame-pointer walk when every frame of the stack is known to keep a frame
// pointer; otherwise libunwind's unw_backtrace (loaded at run time, never linked; its
// per-thread trace cache makes a stack it has seen ~10x cheaper than backtrace()), or glibc's
// backtrace() where libunwind8 cannot be loaded.
//
// Whether a frame keeps a frame pointer is a property of its return address (the compiler's
// choice for the function it lies in), and Debian's libc and Python are built without. It
// is learnt, never guessed: after a fallback, a walk from the same frame is compared with
// what libunwind found; a return address whose frame record leads to libunwind's next
// return address gets the verdict "steps", the first that does not ends the walk. The
// verdicts go into one lock-free table for the process, so that a stack whose return
// addresses all have it costs only the walk, each step checked (on the thread's stack,
// aligned, above the last).
#include "agent/unwind.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

namespace memtap {
namespace {

// libunwind8's entry point, looked up by name so that the agent builds without libunwind-dev
// and runs without libunwind8 (then with backtrace()).
struct Libunwind {
  int (*backtrace)(void**, int);
};

constexpr int kMaxUnwound = 256;  // frames a fallback gives at most

enum class Method { kFramePointers, kLibunwind, kBacktrace };

// Process-wide, set once by unwind_warm_up before any capture.
Method g_method = Method::kBacktrace;
Libunwind g_unw{};

// MEMTAP_UNWIND_STATS=1: what the captures took, printed at exit (off: not counted).
bool g_count = false;
std::atomic<uint64_t> g_captures{0}, g_frames{0}, g_ns{0}, g_fallbacks{0}, g_fallback_frames{0},
    g_fallback_ns{0};

uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

void count(int frames, bool walked, uint64_t ns) {
  g_captures.fetch_add(1, std::memory_order_relaxed);
  g_frames.fetch_add(uint64_t(frames), std::memory_order_relaxed);
  g_ns.fetch_add(ns, std::memory_order_relaxed);
  if (!walked) {
    g_fallbacks.fetch_add(1, std::memory_order_relaxed);
    g_fallback_frames.fetch_add(uint64_t(frames), std::memory_order_relaxed);
    g_fallback_ns.fetch_add(ns, std::memory_order_relaxed);
  }
}

__attribute__((destructor)) void print_counts() {
  if (!g_count) return;
  UnwindCounts c = unwind_counts();
  char line[256];
  auto per = [](uint64_t a, uint64_t b) { return b ? double(a) / double(b) : 0.0; };
  int n = snprintf(line, sizeof line,
                   "memtap: unwind: %llu captures, %.1f frames and %.0f ns each; fallbacks: %llu "
                   "(%.1f%%), %.1f frames and %.0f ns each\n",
                   (unsigned long long)c.captures, per(c.frames, c.captures), per(c.ns, c.captures),
                   (unsigned long long)c.fallbacks, 100 * per(c.fallbacks, c.captures),
                   per(c.fallback_frames, c.fallbacks), per(c.fallback_ns, c.fallbacks));
  if (n > 0) write(2, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
}

// Return address -> whether the frame it lies in keeps a frame pointer there, direct-mapped:
// a slot holds (address << 1) | steps, 0 when empty; a collision overwrites (the loser is
// learnt again). Lock-free, so that a capture in a signal handler can use it.
constexpr uint32_t kVerdictSlots = 1 << 14;
std::atomic<uint64_t> g_verdicts[kVerdictSlots];

enum class Verdict { kUnknown, kSteps, kNoFramePointer };

uint32_t verdict_slot(uintptr_t ip) {
  return uint32_t((ip * 0x9e3779b97f4a7c15ull) >> 50) & (kVerdictSlots - 1);
}

Verdict verdict_of(uintptr_t ip) {
  uint64_t v = g_verdicts[verdict_slot(ip)].load(std::memory_order_relaxed);
  if ((v >> 1) != ip) return Verdict::kUnknown;
  return (v & 1) ? Verdict::kSteps : Verdict::kNoFramePointer;
}

void learn_verdict(uintptr_t ip, bool steps) {
  std::atomic<uint64_t>& slot = g_verdicts[verdict_slot(ip)];
  uint64_t v = (uint64_t(ip) << 1) | (steps ? 1 : 0);
  // Mostly known already: no store, so that threads do not pass the cache line around.
  if (slot.load(std::memory_order_relaxed) != v) slot.store(v, std::memory_order_relaxed);
}

// Code ranges a dlclose unmapped (forget_unmapped_code). libunwind keeps, per thread and per
// return address, how to step past its frame (unw_backtrace's trace cache), and nothing
// flushes it (unw_flush_cache leaves it): a stack it unwinds through code mapped where other
// code was may follow a step learnt from the old code. Such a stack is taken again with
// backtrace(), whose unwinder finds each frame's unwind table anew (_dl_find_object).
// Append-only, so that a capture reads each range whole; past kUnloadedRanges the last one
// widens (lo first: in between it covers at least what it did).
constexpr int kUnloadedRanges = 32;
std::atomic<int> g_unloaded_count{0};
std::atomic<uintptr_t> g_unloaded_lo[kUnloadedRanges], g_unloaded_hi[kUnloadedRanges];
std::atomic_flag g_unloaded_writing = ATOMIC_FLAG_INIT;  // between dlcloses on two threads

void note_unloaded(uintptr_t lo, uintptr_t hi) {
  while (g_unloaded_writing.test_and_set(std::memory_order_acquire)) {
  }
  int n = g_unloaded_count.load(std::memory_order_relaxed);
  bool covered = false;  // a plugin loaded and unloaded in a loop lands in the same range
  for (int i = 0; i < n && !covered; ++i) {
    covered = lo >= g_unloaded_lo[i].load(std::memory_order_relaxed) &&
              hi <= g_unloaded_hi[i].load(std::memory_order_relaxed);
  }
  if (!covered && n < kUnloadedRanges) {
    g_unloaded_lo[n].store(lo, std::memory_order_relaxed);
    g_unloaded_hi[n].store(hi, std::memory_order_relaxed);
    g_unloaded_count.store(n + 1, std::memory_order_release);
  } else if (!covered) {
    std::atomic<uintptr_t>& last_lo = g_unloaded_lo[kUnloadedRanges - 1];
    std::atomic<uintptr_t>& last_hi = g_unloaded_hi[kUnloadedRanges - 1];
    if (lo < last_lo.load(std::memory_order_relaxed)) last_lo.store(lo, std::memory_order_release);
    if (hi > last_hi.load(std::memory_order_relaxed)) last_hi.store(hi, std::memory_order_release);
  }
  g_unloaded_writing.clear(std::memory_order_release);
}

// Whether a return address of frames[0, n) lies where code was unmapped.
bool in_unloaded_code(void* const* frames, int n) {
  int k = g_unloaded_count.load(std::memory_order_acquire);
  for (int f = 0; f < n && k > 0; ++f) {
    auto ip = reinterpret_cast<uintptr_t>(frames[f]);
    for (int i = 0; i < k; ++i) {
      if (ip >= g_unloaded_lo[i].load(std::memory_order_acquire) &&
          ip < g_unloaded_hi[i].load(std::memory_order_acquire)) {
        return true;
      }
    }
  }
  return false;
}

// The calling thread's stack, [lo, hi), looked up once per thread (pthread_getattr_np
// allocates: the capture runs with tl_agent_busy set). lo == hi: unknown, no frame walk.
struct StackBounds {
  uintptr_t lo, hi;
};
__thread StackBounds tl_stack __attribute__((tls_model("initial-exec"))) = {0, 0};

StackBounds thread_stack() {
  if (__builtin_expect(tl_stack.hi != 0, 1)) return tl_stack;
  StackBounds b{1, 1};
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* base;
    size_t size;
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
      b.lo = reinterpret_cast<uintptr_t>(base);
      b.hi = b.lo + size;
    }
    pthread_attr_destroy(&attr);
  }
  tl_stack = b;
  return b;
}

// A frame record [fp] = caller's rbp, [fp + 8] = return address, that may be read: on this
// thread's stack, aligned as the ABI keeps rbp, above the frame it was reached from.
bool frame_readable(uintptr_t fp, uintptr_t below, StackBounds s) {
  return fp > below && fp >= s.lo && fp + 16 <= s.hi && (fp & 15) == 0;
}

// The thread's outermost frames (main's callers in libc, or start_thread and clone3): built
// without frame pointers on Debian, so every walk would end in a fallback there. They do
// not change while the thread lives, so they are kept as the thread's tail: when the walk
// reads the return address `ip` from the frame record `fp` where it was learnt, the rest of
// the stack is `frames`. At most 2: the last two frames of a thread (_start and
// __libc_start_main, clone3 and start_thread) never return while it lives, so the function
// they called is the same activation; a third could be any function that main calls twice
// at the same depth, with another return address in main each time.
constexpr int kTailFrames = 2;
struct StackTail {
  uintptr_t ip, fp;
  int count;
  void* frames[kTailFrames];
};
__thread StackTail tl_tail __attribute__((tls_model("initial-exec"))) = {0, 0, 0, {}};

// After a fallback: which of the return addresses `truth` (innermost first, as libunwind
// found them) a frame-pointer walk from `fp` reaches too. Each one it reaches gets its
// verdict: "steps" when the walk's next return address is truth's next one.
__attribute__((noinline, cold)) void learn(uintptr_t fp, void* const* truth, int m, bool truncated,
                                           StackBounds s) {
  uintptr_t below = 0;
  for (int k = 0; k < m && frame_readable(fp, below, s); ++k) {
    auto* record = reinterpret_cast<const uintptr_t*>(fp);
    uintptr_t ip = record[1];
    if (ip != reinterpret_cast<uintptr_t>(truth[k])) return;
    if (k + 1 == m && truncated) return;
    uintptr_t next = record[0];
    bool steps = k + 1 == m
                     ? next == 0
                     : frame_readable(next, fp, s) && reinterpret_cast<const uintptr_t*>(next)[1] ==
                                                          reinterpret_cast<uintptr_t>(truth[k + 1]);
    learn_verdict(ip, steps);
    if (!steps) {
      if (m - k - 1 <= kTailFrames) {
        tl_tail = {ip, fp, m - k - 1, {}};
        for (int i = 0; i < m - k - 1; ++i) tl_tail.frames[i] = truth[k + 1 + i];
      }
      return;
    }
    below = fp;
    fp = next;
  }
}

// The walk from the frame record `fp` of capture_return_addresses; returns how many return
// addresses it wrote, or one of these when it met a frame it cannot step past (out is then
// scratch): a return address without a verdict (or a thread without its tail yet), so that
// the fallback's answer is worth learning from; or one known to have no frame pointer, where
// there is nothing new to learn (every fallback of a Python program's stacks).
constexpr int kWalkLearn = -1, kWalkKnownStop = -2;
__attribute__((always_inline)) inline int walk_frames(uintptr_t fp, void** out, int max,
                                                      StackBounds s) {
  if (!frame_readable(fp, 0, s)) return kWalkKnownStop;
  int n = 0;
  while (n < max) {
    auto* record = reinterpret_cast<const uintptr_t*>(fp);
    uintptr_t ip = record[1];
    if (ip == 0) break;
    out[n++] = reinterpret_cast<void*>(ip);
    if (ip == tl_tail.ip && fp == tl_tail.fp) {
      for (int i = 0; i < tl_tail.count && n < max; ++i) out[n++] = tl_tail.frames[i];
      break;
    }
    Verdict v = verdict_of(ip);
    if (v != Verdict::kSteps) {
      // Verdicts are the process's, tails the thread's: a thread without one learns it.
      return v == Verdict::kUnknown || tl_tail.ip == 0 ? kWalkLearn : kWalkKnownStop;
    }
    uintptr_t next = record[0];
    if (next == 0) break;  // the outermost frame (_start and clone clear rbp)
    // A frame known to keep a frame pointer whose saved rbp is no frame record: the chain is
    // broken (the program overwrote it, or switched stacks). The stack ends here: libunwind
    // and libgcc would step through the same rbp (the caller's CFA is rbp + 16) and read it
    // unchecked.
    if (!frame_readable(next, fp, s)) break;
    fp = next;
  }
  return n;
}

}  // namespace

UnwindCounts unwind_counts() {
  auto get = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  return {get(g_captures),  get(g_frames),          get(g_ns),
          get(g_fallbacks), get(g_fallback_frames), get(g_fallback_ns)};
}

void forget_unmapped_code(uintptr_t lo, uintptr_t hi) {
  // A slot is emptied only if it still holds what was read: a verdict learnt meanwhile for
  // an address elsewhere (a collision) stays.
  for (std::atomic<uint64_t>& slot : g_verdicts) {
    uint64_t v = slot.load(std::memory_order_relaxed);
    uintptr_t ip = uintptr_t(v >> 1);
    if (v != 0 && ip >= lo && ip < hi)
      slot.compare_exchange_strong(v, 0, std::memory_order_relaxed);
  }
  note_unloaded(lo, hi);
}

void forget_all_verdicts() {
  for (std::atomic<uint64_t>& slot : g_verdicts) slot.store(0, std::memory_order_relaxed);
}

void unwind_warm_up() {
  const char* stats = getenv("MEMTAP_UNWIND_STATS");
  g_count = stats && strcmp(stats, "1") == 0;
  const char* method = getenv("MEMTAP_UNWIND");  // for benchmarks: the three methods side by side
  void* lib = nullptr;
  if (!method || strcmp(method, "backtrace") != 0) {
    lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  }
  if (lib) {
    g_unw.backtrace = reinterpret_cast<int (*)(void**, int)>(dlsym(lib, "unw_backtrace"));
    if (g_unw.backtrace) {
      g_method =
          method && strcmp(method, "libunwind") == 0 ? Method::kLibunwind : Method::kFramePointers;
    }
  }
  void* addrs[8];
  capture_return_addresses(addrs, 8);  // loads libgcc_s or sets libunwind up, now
  // backtrace() also retakes a libunwind answer through unmapped code: libgcc_s, now.
  if (g_method != Method::kBacktrace) backtrace(addrs, 8);
}

// The capture, inlined into capture_return_addresses: its frame is where both the walk and
// the unwinders start. `walked`: no fallback was needed.
__attribute__((always_inline)) inline int capture(void** out, int max, bool* walked) {
  uintptr_t fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  StackBounds s{};
  bool learn_after = false;
  *walked = false;
  if (g_method == Method::kFramePointers) {
    s = thread_stack();
    int n = walk_frames(fp, out, max, s);
    if (n >= 0) {
      *walked = true;
      return n;
    }
    learn_after = n == kWalkLearn;
  }
  // Both unwinders start with this function's own frame, which is left out.
  void* frames[kMaxUnwound + 1];
  int want = max < kMaxUnwound ? max + 1 : kMaxUnwound + 1;
  int n = g_method == Method::kBacktrace ? backtrace(frames, want) : g_unw.backtrace(frames, want);
  if (g_method != Method::kBacktrace && in_unloaded_code(frames, n)) n = backtrace(frames, want);
  bool truncated = n == want;
  n = n > 0 ? n - 1 : 0;
  memcpy(out, frames + 1, sizeof(void*) * size_t(n));
  if (learn_after) learn(fp, out, n, truncated, s);
  return n;
}

__attribute__((noinline)) int capture_return_addresses(void** out, int max) {
  if (max <= 0) return 0;
  bool walked;
  if (__builtin_expect(!g_count, 1)) return capture(out, max, &walked);
  uint64_t start = now_ns();
  int n = capture(out, max, &walked);
  count(n, walked, now_ns() - start);
  return n;
}

}  // namespace memtap
