// The writer side of the string log: interning text from any thread, lock-free. See
// string_log.h for the layout and the publication order the sender relies on.
#include "agent/string_log.h"

#include <sys/mman.h>

#include <cstring>

#include "agent/raw_syscalls.h"

namespace memtap {

StringLog g_string_log;

namespace {

constexpr uint64_t kMinBytes = 1ull << 20;
constexpr uint64_t kMaxBytes = 4096ull << 20;
constexpr uint64_t kBytesPerId = 128;  // index for one id per 128 bytes: ~19% of the mapping

uint64_t align8(uint64_t n) {
  return (n + 7) & ~uint64_t{7};
}

// 8 bytes a step, then a full avalanche (splitmix64's finaliser): the slot comes from the
// low bits and the tag from the high ones.
uint64_t hash_text(const char* p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  uint64_t w = 0;
  memcpy(&w, p, n);
  h ^= w;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

// Made once, by whichever thread interns first; a loser of the race unmaps its own.
StringLogMap* make_map() {
  if (g_string_log.map_failed.load(std::memory_order_relaxed)) return nullptr;
  uint64_t bytes = g_string_log.limit_bytes;
  if (bytes < kMinBytes) bytes = kMinBytes;
  if (bytes > kMaxBytes) bytes = kMaxBytes;
  uint64_t max_ids = bytes / kBytesPerId;
  uint64_t slots = 1;
  while (slots < 2 * max_ids) slots <<= 1;
  uint64_t header = align8(sizeof(StringLogMap));
  uint64_t index = header + max_ids * 8 + slots * 8;
  // Reserved, not committed: pages cost memory only once text is written to them.
  auto* base = static_cast<char*>(raw_mmap_anon(bytes, MAP_NORESERVE));
  if (!base) {
    g_string_log.map_failed.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  auto* m = reinterpret_cast<StringLogMap*>(base);  // fresh pages are zero
  m->mapping_bytes = bytes;
  m->max_ids = uint32_t(max_ids);
  m->slot_mask = uint32_t(slots - 1);
  m->offsets = reinterpret_cast<std::atomic<uint64_t>*>(base + header);
  m->slots = reinterpret_cast<std::atomic<uint64_t>*>(base + header + max_ids * 8);
  m->arena = base + index;
  m->arena_bytes = bytes - index;
  m->next_id.store(1, std::memory_order_relaxed);  // 0 means "no text"
  StringLogMap* expected = nullptr;
  if (!g_string_log.map.compare_exchange_strong(expected, m, std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
    raw_munmap(base, bytes);
    return expected;
  }
  return m;
}

// Writes a new entry and publishes it; its id, or 0 when the log is full.
uint32_t append(StringLogMap* m, const char* text, uint32_t length) {
  uint64_t need = align8(sizeof length + length + 1);
  // Checked before taking: counters that only grow must not run past their type.
  if (m->next_id.load(std::memory_order_relaxed) >= m->max_ids) return 0;
  if (m->arena_used.load(std::memory_order_relaxed) + need > m->arena_bytes) return 0;
  uint64_t at = m->arena_used.fetch_add(need, std::memory_order_relaxed);
  if (at + need > m->arena_bytes) return 0;
  uint32_t id = m->next_id.fetch_add(1, std::memory_order_relaxed);
  if (id >= m->max_ids) return 0;  // its bytes are wasted; the log is full anyway
  char* entry = m->arena + at;
  memcpy(entry, &length, sizeof length);
  memcpy(entry + sizeof length, text, length);
  entry[sizeof length + length] = 0;
  m->offsets[id].store(at + 1, std::memory_order_release);
  return id;
}

bool same_text(const StringLogMap* m, uint32_t id, const char* text, uint32_t length) {
  // Only published ids enter the hash table, and the slot was read with acquire.
  uint64_t at = m->offsets[id].load(std::memory_order_relaxed);
  uint32_t stored;
  const char* p = string_log_text(m, at, &stored);
  return stored == length && memcmp(p, text, length) == 0;
}

uint32_t lost() {
  g_string_log.lost.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

}  // namespace

uint32_t string_log_intern(const char* text, size_t length) {
  if (length == 0 || !text) return 0;
  if (length > kMaxInternBytes) return lost();
  StringLogMap* m = g_string_log.map.load(std::memory_order_acquire);
  if (__builtin_expect(!m, 0) && !(m = make_map())) return lost();
  uint64_t h = hash_text(text, length);
  uint64_t tag = h & ~uint64_t{0xffffffff};
  uint32_t mine = 0;  // the entry this call wrote, once it had to write one
  for (uint64_t probe = 0, i = h & m->slot_mask; probe <= m->slot_mask;
       ++probe, i = (i + 1) & m->slot_mask) {
    uint64_t s = m->slots[i].load(std::memory_order_acquire);
    if (s == 0) {
      if (!mine && !(mine = append(m, text, uint32_t(length)))) return lost();
      if (m->slots[i].compare_exchange_strong(s, tag | mine, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
        return mine;
      }
      // Another text took the slot first; `s` is now its value.
    }
    if ((s & ~uint64_t{0xffffffff}) == tag && same_text(m, uint32_t(s), text, uint32_t(length))) {
      return uint32_t(s);
    }
  }
  return lost();  // unreachable: there are twice as many slots as ids
}

void string_log_set_limit(uint64_t bytes) {
  if (g_string_log.map.load(std::memory_order_acquire) == nullptr) g_string_log.limit_bytes = bytes;
}

void string_log_after_fork_child() {
  g_string_log.lost.store(0, std::memory_order_relaxed);
  StringLogMap* m = g_string_log.map.load(std::memory_order_acquire);
  if (!m) return;
  uint32_t end = m->next_id.load(std::memory_order_acquire);
  if (end > m->max_ids) end = m->max_ids;
  for (uint32_t id = 1; id < end; ++id) {
    if (m->offsets[id].load(std::memory_order_acquire) == 0) {
      m->offsets[id].store(kStringTombstone, std::memory_order_release);
    }
  }
}

}  // namespace memtap
