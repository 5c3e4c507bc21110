// C call stacks: return addresses (agent/unwind.h), a per-thread cache by them, interned as
// address text (common/address_stack.h). See c_stacks.h for the locks this may take.
#include "agent/c_stacks.h"

#include <link.h>
#include <pthread.h>

#include "agent/raw_syscalls.h"
#include "agent/string_log.h"
#include "agent/unwind.h"
#include "common/address_stack.h"

namespace memtap {
namespace {

constexpr int kMaxFrames = 64;          // frames kept, after the agent's own
constexpr int kAgentFrames = 8;         // room for the agent's frames at the top of a backtrace
constexpr uint32_t kCacheSlots = 1024;  // per thread; a power of two

struct CacheSlot {
  uint64_t hash;  // of the return addresses; 0: empty
  uint32_t id;
};

// One a thread, mapped on its first large allocation and unmapped when it exits.
struct CStackThread {
  CacheSlot cache[kCacheSlots];
  void* addrs[kMaxFrames + kAgentFrames];
  char text[kMaxFrames * (kAddressStackLineBytes + 1)];
};

__thread CStackThread* tl_state __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool tl_exited __attribute__((tls_model("initial-exec"))) = false;

// The agent's own code, [lo, hi): frames there are the hooks, not the application.
uintptr_t g_agent_lo = 0, g_agent_hi = 0;
pthread_key_t g_thread_key;
bool g_ready = false;

int find_agent_range(dl_phdr_info* info, size_t, void* data) {
  auto self = reinterpret_cast<uintptr_t>(data);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (start < lo) lo = start;
    if (start + ph.p_memsz > hi) hi = start + ph.p_memsz;
  }
  if (self < lo || self >= hi) return 0;
  g_agent_lo = lo;
  g_agent_hi = hi;
  return 1;
}

void thread_exited(void* state) {
  tl_state = nullptr;
  tl_exited = true;  // allocations in later TLS destructors get no C stack
  raw_munmap(state, sizeof(CStackThread));
}

CStackThread* thread_state() {
  if (__builtin_expect(tl_state != nullptr, 1)) return tl_state;
  if (tl_exited || !g_ready) return nullptr;
  auto* s = static_cast<CStackThread*>(raw_mmap_anon(sizeof(CStackThread)));
  if (!s) return nullptr;
  pthread_setspecific(g_thread_key, s);
  tl_state = s;
  return s;
}

uint64_t hash_frames(void* const* addrs, int n) {
  uint64_t h = 0xcbf29ce484222325ull ^ uint64_t(n);
  for (int i = 0; i < n; ++i) {
    h ^= reinterpret_cast<uintptr_t>(addrs[i]);
    h *= 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return h | 1;  // never 0, the empty slot
}

}  // namespace

void c_stacks_warm_up() {
  unwind_warm_up();
  dl_iterate_phdr(find_agent_range,
                  reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&c_stacks_warm_up)));
  g_ready = pthread_key_create(&g_thread_key, thread_exited) == 0;
}

uint32_t c_stack_capture() {
  CStackThread* s = thread_state();
  if (!s) return 0;
  int n = capture_return_addresses(s->addrs, kMaxFrames + kAgentFrames);
  int first = 0;
  while (first < n && reinterpret_cast<uintptr_t>(s->addrs[first]) >= g_agent_lo &&
         reinterpret_cast<uintptr_t>(s->addrs[first]) < g_agent_hi) {
    ++first;
  }
  void* const* frames = s->addrs + first;
  int count = n - first;
  if (count > kMaxFrames) count = kMaxFrames;
  if (count <= 0) return 0;

  uint64_t h = hash_frames(frames, count);
  CacheSlot& slot = s->cache[h & (kCacheSlots - 1)];
  if (slot.hash == h) return slot.id;

  size_t len = format_address_stack(frames, count, s->text, sizeof s->text);
  uint32_t id = string_log_intern(s->text, len);
  if (id != 0) {
    slot.hash = h;
    slot.id = id;
  }
  return id;
}

}  // namespace memtap
