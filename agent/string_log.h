// Interned text of one agent instance (process): owner labels, marks, range and operator
// names, call stacks, tracer function names. Each distinct text gets an id once; events
// refer to it by EventRecord::string_id, and the sender sends every new text once, in the
// batch's `strings` (wire.capnp), in or before the batch of the first event that uses it.
//
// Callable from the hooks: no lock, no allocation through the hooked allocator, no syscall
// on the common path (memory is reserved once, with mmap). Bounded: when its memory is
// used up, intern returns 0 and counts the loss.
//
// Like event_buffer.h, the layout below is shared with the sender library (its own link
// namespace, dlmopen): the agent writes, the sender reads, through plain memory and
// lock-free atomics only.
//
// The mapping: a StringLogMap header, then `offsets` (one word per id: where the entry
// lies in the arena, 0 while not yet published), then the hash `slots` (text -> id), then
// the arena of entries (a uint32_t length, the text, a NUL). Ids come from one counter,
// bytes from another; an entry is written and then published with one release store of
// its offset, and only then entered in the hash table (CAS on an empty slot). Two threads
// interning the same new text at once both write an entry; one wins the slot and both
// return its id, the other entry is sent but never referred to.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memtap {

// offsets[id] of an id whose interning thread vanished before publishing (fork(): only
// the forking thread survives); the sender skips it.
constexpr uint64_t kStringTombstone = ~uint64_t{0};
// The longest text one intern takes (a deep C++ stack is a few KiB); longer is lost.
constexpr size_t kMaxInternBytes = size_t{1} << 20;

struct StringLogMap {
  uint64_t mapping_bytes;
  uint32_t max_ids;    // ids are 1 .. max_ids-1
  uint32_t slot_mask;  // hash slots: slot_mask+1, a power of two >= 2 * max_ids
  uint64_t arena_bytes;
  std::atomic<uint64_t>* offsets;  // [max_ids]: arena offset + 1; 0 unpublished
  std::atomic<uint64_t>* slots;    // [slot_mask+1]: (hash >> 32) << 32 | id; 0 empty
  char* arena;
  std::atomic<uint64_t> arena_used;
  std::atomic<uint32_t> next_id;
};

// Process-wide, constant-initialised: the hooks (stacks) and callers that run before the
// agent's constructor intern text too, and have nowhere else to find the table. The
// mapping is made on first use.
struct StringLog {
  std::atomic<StringLogMap*> map{nullptr};
  std::atomic<bool> map_failed{false};  // the mapping could not be made: every intern fails
  uint64_t limit_bytes = 64ull << 20;   // MEMTAP_STRING_MB: the whole mapping, index included
  std::atomic<uint64_t> lost{0};        // interns refused (log full, text too long)
};

extern StringLog g_string_log;

// The id of `length` bytes of `text`; the same text gives the same id for the life of the
// process (a fork() child keeps its parent's ids, and sends them again to its monitor).
// 0 for empty text, or when the log is full.
uint32_t string_log_intern(const char* text, size_t length);

// Before the first intern (the agent's constructor): the mapping's size. Ignored once made.
void string_log_set_limit(uint64_t bytes);

// In a fork() child: ids that a vanished thread had taken but not published become
// tombstones (else the sender would wait for them forever); the loss count restarts.
void string_log_after_fork_child();

// The text of a published entry (sender side).
inline const char* string_log_text(const StringLogMap* m, uint64_t offset_plus_one,
                                   uint32_t* length) {
  const char* entry = m->arena + (offset_plus_one - 1);
  __builtin_memcpy(length, entry, sizeof *length);
  return entry + sizeof *length;
}

}  // namespace memtap
