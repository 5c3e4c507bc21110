// The per-thread buffers end to end: what the hooks write (agent/event_buffer_writer.h,
// 8-byte slots, agent/event_slot.h) is what the sender drains (agent/sender/buffer_drain),
// field for field and in order, across chunk boundaries, with a reader running at the same
// time, and with records past the byte bound counted as dropped.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "agent/event_buffer_writer.h"
#include "agent/event_slot.h"
#include "agent/sender/buffer_drain.h"

namespace memtap {
namespace {

struct Expected {
  EventKind kind;
  uint64_t addr;
  uint64_t size_bytes;
  uint64_t clock;
  uint32_t string_id;
};

// The i-th event of a stream that mixes narrow records (most of them) with every reason for
// a compact or a wide one.
Expected event_for(uint64_t i) {
  Expected e{EventKind::kMalloc, 0x7f0000000000 + i * 16, 16 + i % 4096, 0x123400000000 + i * 3, 0};
  switch (i % 97) {
    case 0:  // text: wide
      e.kind = EventKind::kOpStart;
      e.string_id = uint32_t(i + 1);
      break;
    case 13:  // 32 MiB and more: wide
      e.size_bytes = (uint64_t{1} << 25) + i;
      break;
    case 29:  // an address above 2^48: wide (and the next record far from it: compact)
      e.addr = 0xffff800000000000 + i;
      break;
    case 41:  // just below both bounds: compact
      e.addr = (uint64_t{1} << 48) - 16;
      e.size_bytes = (uint64_t{1} << 25) - 1;
      break;
    case 53:  // 2^21 ticks later than the stream, then back: two compact records
      e.clock += uint64_t{1} << 21;
      break;
    case 67:  // too large for a narrow malloc: compact
      e.size_bytes = 70000;
      break;
    case 83:  // another kind: compact
      e.kind = EventKind::kMmap;
      break;
    default:
      if (i % 2) {
        e.kind = EventKind::kFree;
        e.size_bytes = 0;
      }
  }
  return e;
}

void write_event(BufferRegistry* reg, bool lossless, const Expected& e) {
  if (e.string_id != 0) {
    record_event_with_string(reg, lossless, e.kind, e.addr, e.size_bytes, e.clock, e.string_id);
  } else {
    record_event(reg, lossless, e.kind, e.addr, e.size_bytes, e.clock);
  }
}

void expect_record(const EventRecord& r, const Expected& e, uint64_t i) {
  ASSERT_EQ(r.kind, uint16_t(e.kind)) << "record " << i;
  ASSERT_EQ(r.addr, e.addr) << "record " << i;
  ASSERT_EQ(r.size_bytes, e.size_bytes) << "record " << i;
  ASSERT_EQ(r.ts_ns, e.clock & kSlotClockMask) << "record " << i;
  ASSERT_EQ(r.string_id, e.string_id) << "record " << i;
}

// Drains everything there is, max_per_call records at a time, checking each against the
// stream from `next` on. Returns the records drained.
uint64_t drain_and_check(BufferRegistry* reg, size_t max_per_call, uint64_t* next) {
  uint64_t total = 0;
  DrainResult out;
  for (;;) {
    out.clear();
    size_t n = drain_buffers(reg, max_per_call, &out);
    if (n == 0) return total;
    EXPECT_EQ(out.records.size(), n);
    EXPECT_LE(n, max_per_call);
    for (const EventRecord& r : out.records) {
      expect_record(r, event_for(*next), *next);
      if (::testing::Test::HasFatalFailure()) return total;
      ++*next;
    }
    total += n;
  }
}

TEST(EventSlot, CompactRecordsKeepEveryField) {
  const uint64_t max_addr = (uint64_t{1} << kCompactAddrBits) - 1;
  const uint64_t max_size = (uint64_t{1} << kCompactSizeBits) - 1;
  for (uint32_t kind = 0; kind <= uint32_t(EventKind::kPoolPeaks); ++kind) {
    for (uint64_t addr : {uint64_t{0}, uint64_t{0x5555aaaa5550}, max_addr}) {
      for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{0xffff}, uint64_t{0x10000},
                            uint64_t{0x1a5a5a5}, max_size}) {
        ASSERT_TRUE(fits_compact(addr, size));
        uint64_t s[kWideSlots] = {};
        pack_compact(s, EventKind(kind), addr, size, 0xfedcba9876543210);
        SlotChain chain{1, 2};
        EventRecord r;
        ASSERT_EQ(unpack_record(s, &chain, &r), kCompactSlots);
        EXPECT_EQ(r.kind, kind);
        EXPECT_EQ(r.addr, addr);
        EXPECT_EQ(r.size_bytes, size);
        EXPECT_EQ(r.ts_ns, uint64_t{0xba9876543210});
        EXPECT_EQ(r.string_id, 0u);
        EXPECT_EQ(chain.clock, r.ts_ns) << "the chain moves to the record";
        EXPECT_EQ(chain.addr, addr);
      }
    }
  }
  EXPECT_FALSE(fits_compact(max_addr + 1, 0));
  EXPECT_FALSE(fits_compact(0, max_size + 1));
  EXPECT_FALSE(fits_compact(~uint64_t{0}, ~uint64_t{0}));
}

TEST(EventSlot, WideRecordsKeepEveryField) {
  uint64_t s[kWideSlots] = {};
  pack_wide(s, EventKind::kCStack, ~uint64_t{0}, uint64_t{1} << 40, 0x0000ffffffffffff, 0xdeadbeef);
  SlotChain chain{};
  EventRecord r;
  ASSERT_EQ(unpack_record(s, &chain, &r), kWideSlots);
  EXPECT_EQ(r.kind, uint16_t(EventKind::kCStack));
  EXPECT_EQ(r.addr, ~uint64_t{0});
  EXPECT_EQ(r.size_bytes, uint64_t{1} << 40);
  EXPECT_EQ(r.ts_ns, uint64_t{0x0000ffffffffffff});
  EXPECT_EQ(r.string_id, 0xdeadbeefu);
  EXPECT_EQ(r.device, 0u);
  EXPECT_EQ(chain.clock, r.ts_ns);
  EXPECT_EQ(chain.addr, ~uint64_t{0});

  // A device event's ordinal rides in the tag's high half.
  pack_wide(s, EventKind::kDeviceMalloc, 0x7f00000000, 512, 42, wide_tag(0xfffffffe, 0xfffe));
  ASSERT_EQ(unpack_record(s, &chain, &r), kWideSlots);
  EXPECT_EQ(r.kind, uint16_t(EventKind::kDeviceMalloc));
  EXPECT_EQ(r.device, 0xfffeu);
  EXPECT_EQ(r.string_id, 0xfffffffeu);
  EXPECT_EQ(r.addr, uint64_t{0x7f00000000});
  EXPECT_EQ(r.size_bytes, 512u);
}

// A narrow slot holds a malloc or free as distances from the chain's end. The writer's chain
// has the full clock and the reader's its low 48 bits; here the sum wraps past 2^48.
TEST(EventSlot, NarrowRecordsKeepEveryFieldUpToTheirBounds) {
  const SlotChain written{0x1234ffffffffff00, 0x7f0012345670};
  const int64_t malloc_reach = int64_t{1} << (kNarrowMallocAddrBits - 1);
  const int64_t free_reach = int64_t{1} << (kNarrowFreeAddrBits - 1);
  const uint64_t max_dt = (uint64_t{1} << kNarrowClockBits) - 1;
  const uint64_t max_size = (uint64_t{1} << kNarrowSizeBits) - 1;
  for (EventKind kind : {EventKind::kMalloc, EventKind::kFree}) {
    const int64_t reach = kind == EventKind::kMalloc ? malloc_reach : free_reach;
    for (uint64_t dt : {uint64_t{0}, uint64_t{1}, uint64_t{300}, max_dt}) {
      for (int64_t da : {-reach, int64_t{-16}, int64_t{0}, int64_t{8}, reach - 1}) {
        for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{4096}, max_size}) {
          if (kind == EventKind::kFree && size != 0) continue;
          const uint64_t addr = written.addr + uint64_t(da);
          const uint64_t slot = narrow_slot(kind, addr, size, written.clock + dt, written);
          ASSERT_NE(slot, 0u) << "dt " << dt << " da " << da << " size " << size;
          const uint64_t s[kWideSlots] = {slot};  // what a reader may look at
          SlotChain read{written.clock & kSlotClockMask, written.addr};
          EventRecord r;
          ASSERT_EQ(unpack_record(s, &read, &r), 1u);
          EXPECT_EQ(r.kind, uint16_t(kind));
          EXPECT_EQ(r.addr, addr) << "da " << da;
          EXPECT_EQ(r.size_bytes, size);
          EXPECT_EQ(r.ts_ns, (written.clock + dt) & kSlotClockMask) << "dt " << dt;
          EXPECT_EQ(r.string_id, 0u);
          EXPECT_EQ(read.clock, r.ts_ns);
          EXPECT_EQ(read.addr, addr);
        }
      }
    }
    // One past each bound, and a clock that went back: not narrow.
    const uint64_t far = written.addr + uint64_t(reach);
    const uint64_t near_below = written.addr - uint64_t(reach) - 1;
    EXPECT_EQ(narrow_slot(kind, far, 0, written.clock + 1, written), 0u);
    EXPECT_EQ(narrow_slot(kind, near_below, 0, written.clock + 1, written), 0u);
    EXPECT_EQ(narrow_slot(kind, written.addr, 0, written.clock + max_dt + 1, written), 0u);
    EXPECT_EQ(narrow_slot(kind, written.addr, 0, written.clock - 1, written), 0u);
  }
  EXPECT_EQ(narrow_slot(EventKind::kMalloc, written.addr, max_size + 1, written.clock, written),
            0u);
  EXPECT_EQ(narrow_slot(EventKind::kFree, written.addr, 1, written.clock, written), 0u)
      << "a free with a size is not narrow: the narrow free has none";
  EXPECT_EQ(narrow_slot(EventKind::kMmap, written.addr, 64, written.clock, written), 0u);
}

TEST(EventSlot, UnwrapGivesBackTheFullClock) {
  const uint64_t range = kSlotClockMask + 1;
  // Full readings around the places where the low 48 bits wrap, and a TSC near 2^64.
  for (uint64_t now : {uint64_t{1} << 20, range - 5, range + 5, 7 * range + 12345,
                       ~uint64_t{0} - (uint64_t{1} << 30)}) {
    for (uint64_t behind : {uint64_t{0}, uint64_t{1}, uint64_t{3000000000}, (range >> 1) - 1}) {
      if (behind > now) continue;
      uint64_t written = now - behind;
      EXPECT_EQ(unwrap_clock(now, written & kSlotClockMask), written)
          << "now " << now << ", written " << behind << " before";
    }
    // A record written just after the reading (the reader's clock read raced it).
    for (uint64_t ahead : {uint64_t{1}, uint64_t{100000}}) {
      uint64_t written = now + ahead;
      EXPECT_EQ(unwrap_clock(now, written & kSlotClockMask), written)
          << "now " << now << ", written " << ahead << " after";
    }
  }
}

TEST(EventBuffer, DrainGivesBackWhatWasWrittenAcrossChunks) {
  BufferRegistry reg;
  const uint64_t count = 3 * kChunkSlots + 1000;  // wide records included: 4-5 chunks
  std::thread([&] {
    for (uint64_t i = 0; i < count; ++i) write_event(&reg, false, event_for(i));
  }).join();
  uint64_t next = 0;
  EXPECT_EQ(drain_and_check(&reg, 1000, &next), count);
  EXPECT_EQ(next, count);
  EXPECT_EQ(dropped_records(&reg), 0u);
}

TEST(EventBuffer, WideRecordInTheLastSlotsMovesToTheNextChunk) {
  BufferRegistry reg;
  std::thread([&] {
    // Fill all but three slots of the first chunk with narrow records, then a wide one.
    for (uint32_t i = 0; i + 3 < kChunkSlots; ++i) {
      record_event(&reg, false, EventKind::kMalloc, 4096 + i * 16, 32, i);
    }
    ASSERT_EQ(tl_buffer->write_pos, kChunkSlots - 3);
    EventChunk* first = tl_buffer->write_chunk;
    record_event_with_string(&reg, false, EventKind::kMark, 7, 0, 99999, 42);
    EXPECT_NE(tl_buffer->write_chunk, first);
    EXPECT_EQ(tl_buffer->write_pos, kWideSlots);
    EXPECT_EQ(first->committed.load(), kChunkSlots - 3) << "the last slots stay unpublished";
    // Narrow, relative to the wide record in the new chunk.
    record_event(&reg, false, EventKind::kFree, 4096, 0, 100000);
    EXPECT_EQ(tl_buffer->write_pos, kWideSlots + 1);
  }).join();
  DrainResult out;
  ASSERT_EQ(drain_buffers(&reg, SIZE_MAX, &out), kChunkSlots - 1);
  for (uint32_t i = 0; i + 3 < kChunkSlots; ++i) {
    ASSERT_EQ(out.records[i].addr, 4096 + i * 16);
    ASSERT_EQ(out.records[i].ts_ns, i);
  }
  const EventRecord& wide = out.records[kChunkSlots - 3];
  EXPECT_EQ(wide.kind, uint16_t(EventKind::kMark));
  EXPECT_EQ(wide.addr, 7u);
  EXPECT_EQ(wide.string_id, 42u);
  EXPECT_EQ(wide.ts_ns, 99999u);
  EXPECT_EQ(out.records.back().kind, uint16_t(EventKind::kFree));
  EXPECT_EQ(out.records.back().addr, 4096u);
  EXPECT_EQ(out.records.back().ts_ns, 100000u);
  out.clear();
  EXPECT_EQ(drain_buffers(&reg, SIZE_MAX, &out), 0u);
}

// The sender drains while the thread writes: every record arrives once, in order. Also run
// under TSan by scripts/sanitize.sh.
TEST(EventBuffer, ConcurrentDrainSeesEveryRecordInOrder) {
  BufferRegistry reg;
  reg.byte_limit = 4 * sizeof(EventChunk);  // lossless: the writer waits for recycled chunks
  const uint64_t count = 600000;
  std::atomic<bool> done{false};
  // The writer stops once, with records published, until the reader has peeked at them:
  // otherwise every peek may fall while the writer waits for chunks, and the peek would go
  // untested (it did, one run in three, with the test's own code at -O0 under ASan).
  constexpr uint64_t kPauseAt = 1000;
  std::atomic<bool> paused{false};
  std::atomic<bool> peeked{false};
  std::thread writer([&] {
    for (uint64_t i = 0; i < count; ++i) {
      if (i == kPauseAt) {
        paused.store(true, std::memory_order_release);
        while (!peeked.load(std::memory_order_acquire)) std::this_thread::yield();
      }
      write_event(&reg, true, event_for(i));
    }
    done.store(true, std::memory_order_release);
  });
  const uint64_t now = event_for(count).clock;
  while (!paused.load(std::memory_order_acquire)) std::this_thread::yield();
  uint64_t oldest = 0;
  const bool waiting = oldest_unread_clock(&reg, now, &oldest);
  peeked.store(true, std::memory_order_release);
  EXPECT_TRUE(waiting) << "the peek found none of the " << kPauseAt << " records waiting";
  EXPECT_EQ(oldest, event_for(0).clock);
  uint64_t next = 0;
  for (;;) {
    bool finished = done.load(std::memory_order_acquire);
    // The sender's peek at what waits, while the writer publishes: the one buffer's first
    // unread record is the next the drain gives.
    if (oldest_unread_clock(&reg, now, &oldest)) {
      ASSERT_LT(next, count);
      ASSERT_EQ(oldest, event_for(next).clock) << "record " << next;
    }
    drain_and_check(&reg, 777, &next);  // drains until nothing is left
    if (finished || ::testing::Test::HasFatalFailure()) break;
    std::this_thread::yield();
  }
  writer.join();
  EXPECT_EQ(next, count);
  EXPECT_EQ(dropped_records(&reg), 0u);
  EXPECT_LE(reg.chunk_bytes.load(), reg.byte_limit);
}

TEST(EventBuffer, RecordsPastTheByteBoundAreCountedAsDropped) {
  BufferRegistry reg;
  reg.byte_limit = 2 * sizeof(EventChunk);
  const uint64_t count = 5 * kChunkSlots;
  std::thread([&] {
    for (uint64_t i = 0; i < count; ++i) record_event(&reg, false, EventKind::kMalloc, i, 8, i);
  }).join();
  DrainResult out;
  size_t drained = drain_buffers(&reg, SIZE_MAX, &out);
  EXPECT_EQ(drained, 2u * kChunkSlots) << "two chunks' worth, then the bound";
  for (size_t i = 0; i < drained; ++i) ASSERT_EQ(out.records[i].addr, i);
  EXPECT_EQ(drained + dropped_records(&reg), count) << "each record is drained or counted";
}

// A thread that exits retires its buffer; drained, it is the next thread's, chunk and all,
// so threads that come and go do not each take new memory.
TEST(EventBuffer, AnExitedThreadsBufferIsTheNextThreadsOnceDrained) {
  static bool once = (buffer_retire_at_thread_exit(), true);
  (void)once;
  BufferRegistry reg;
  ThreadBuffer* first = nullptr;
  std::thread([&] {
    record_event(&reg, false, EventKind::kMalloc, 64, 8, 1);
    first = tl_buffer;
  }).join();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->state.load(), kBufferRetired);
  DrainResult out;
  ASSERT_EQ(drain_buffers(&reg, SIZE_MAX, &out), 1u);
  EXPECT_EQ(first->state.load(), kBufferFree);
  const uint64_t bytes = reg.chunk_bytes.load();
  ThreadBuffer* second = nullptr;
  std::thread([&] {
    record_event(&reg, false, EventKind::kFree, 64, 0, 2);
    second = tl_buffer;
  }).join();
  EXPECT_EQ(second, first);
  EXPECT_EQ(reg.chunk_bytes.load(), bytes) << "no new chunk";
  out.clear();
  ASSERT_EQ(drain_buffers(&reg, SIZE_MAX, &out), 1u);
  EXPECT_EQ(out.records[0].kind, uint16_t(EventKind::kFree));
}

// A thread's first record was timestamped before its buffer was attached; the sender may have
// begun a cycle meanwhile and told the monitor nothing older would come (64 new threads on
// two cores: up to 7 ms, and those first records came late). It is stamped no earlier than
// the sender's newest cycle; the thread's later records keep their own times.
TEST(EventBuffer, AThreadsFirstRecordIsNoOlderThanTheSendersCycle) {
  BufferRegistry reg;
  reg.sender_cycle_clock.store(5000);
  std::thread([&] {
    record_event(&reg, false, EventKind::kMalloc, 64, 8, 1000);
    record_event(&reg, false, EventKind::kFree, 64, 0, 6000);
  }).join();
  std::thread([&] { record_event(&reg, false, EventKind::kMalloc, 128, 8, 7000); }).join();
  DrainResult out;
  ASSERT_EQ(drain_buffers(&reg, SIZE_MAX, &out), 3u);
  std::vector<uint64_t> times;
  for (const EventRecord& r : out.records) times.push_back(r.ts_ns);
  std::sort(times.begin(), times.end());
  EXPECT_EQ(times, (std::vector<uint64_t>{5000, 6000, 7000}));

  // A pool event is two records at one time (its stream, then its block): when the first is
  // a thread's first record, the block takes its stamp too, so the thread's clock does not go
  // back (the monitor would have begun a new run there and given the block another stream).
  // A later record that goes back but not before the attach keeps its own time.
  std::thread([&] {
    record_device_event(&reg, false, EventKind::kDeviceStream, 0, 7, 0, 2000, 0);
    record_device_event(&reg, false, EventKind::kPoolMalloc, 0, 0x1000, 64, 2000, 0);
    record_event(&reg, false, EventKind::kMalloc, 256, 8, 9000);
    record_event(&reg, false, EventKind::kMalloc, 512, 8, 8000);
  }).join();
  out.clear();
  ASSERT_EQ(drain_buffers(&reg, SIZE_MAX, &out), 4u);
  times.clear();
  for (const EventRecord& r : out.records) times.push_back(r.ts_ns);
  EXPECT_EQ(times, (std::vector<uint64_t>{5000, 5000, 9000, 8000}));
}

// Lossless, a thread whose only chunk is full while other threads' chunks hold the byte
// bound could wait forever: only chunks it has moved past come back to it. It takes one
// past the bound instead, and nothing is dropped.
TEST(EventBuffer, LosslessThreadWithNothingBehindItTakesAChunkPastTheBound) {
  BufferRegistry reg;
  reg.byte_limit = 2 * sizeof(EventChunk);
  std::thread([&] { record_event(&reg, true, EventKind::kMalloc, 1, 8, 1); }).join();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    // Its first chunk is the bound's second; the record after it needs a third.
    for (uint32_t i = 0; i < kChunkSlots + 10; ++i) {
      record_event(&reg, true, EventKind::kMalloc, 4096 + i * 16, 32, i);
    }
    done.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  if (!done.load()) {
    writer.detach();  // stuck for good: fail rather than hang the suite
    FAIL() << "the lossless writer never got a chunk";
  }
  writer.join();
  DrainResult out;
  EXPECT_EQ(drain_buffers(&reg, SIZE_MAX, &out), 1u + kChunkSlots + 10);
  EXPECT_EQ(dropped_records(&reg), 0u);
  EXPECT_EQ(reg.chunk_bytes.load(), 3 * sizeof(EventChunk));
}

// A signal handler that allocates may run while its thread is in the middle of a record.
// Here the thread is held inside one for certain: lossless, with the byte bound reached, it
// waits in record_event for the sender to free a chunk. The handler's records must follow
// the interrupted one, each once, and those past what can wait be counted as dropped.
BufferRegistry* g_handler_registry;
std::atomic<int> g_handler_runs{0};
std::atomic<bool> g_handler_was_inside{false};

void record_from_handler(int) {
  if (tl_buffer == &g_buffer_busy) {  // only a handler that landed inside a record records
    for (uint32_t i = 0; i < kDeferredRecords + 3; ++i) {
      record_event(g_handler_registry, true, EventKind::kMalloc, 0xdead0000 + i * 64, 777, 5);
    }
    g_handler_was_inside.store(true);
  }
  g_handler_runs.fetch_add(1);
}

TEST(EventBuffer, RecordsASignalHandlerMakesInsideARecordFollowIt) {
  BufferRegistry reg;
  reg.byte_limit = 2 * sizeof(EventChunk);  // the first can be recycled once the second is in use
  const uint32_t before = 2 * kChunkSlots;
  g_handler_registry = &reg;
  struct sigaction sa = {};
  sa.sa_handler = record_from_handler;
  struct sigaction old;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);

  std::atomic<bool> filled{false};
  std::thread writer([&] {
    for (uint32_t i = 0; i < before; ++i) {
      record_event(&reg, true, EventKind::kMalloc, 4096 + i * 16, 32, i);
    }
    filled.store(true);
    // No room: waits inside this record until the chunk is drained.
    record_event(&reg, true, EventKind::kFree, 4096, 0, before);
  });
  while (!filled.load()) std::this_thread::yield();
  // A signal may land between two records; send until one lands inside the waiting one
  // (a writer that never marks itself inside a record is given up on, not waited for).
  for (int sent = 0; sent < 100000 && !g_handler_was_inside.load(); ++sent) {
    int runs = g_handler_runs.load();
    if (pthread_kill(writer.native_handle(), SIGUSR1) != 0) break;
    while (g_handler_runs.load() == runs) std::this_thread::yield();
  }
  DrainResult out;
  drain_buffers(&reg, SIZE_MAX, &out);  // frees the first chunk: the writer goes on
  writer.join();
  drain_buffers(&reg, SIZE_MAX, &out);
  sigaction(SIGUSR1, &old, nullptr);
  ASSERT_TRUE(g_handler_was_inside.load()) << "no signal landed inside the waiting record";

  ASSERT_EQ(out.records.size(), before + 1 + kDeferredRecords);
  EXPECT_EQ(out.records[before - 1].addr, 4096 + (before - 1) * 16);
  const EventRecord& interrupted = out.records[before];
  EXPECT_EQ(interrupted.kind, uint16_t(EventKind::kFree));
  EXPECT_EQ(interrupted.addr, 4096u);
  for (uint32_t i = 0; i < kDeferredRecords; ++i) {
    const EventRecord& r = out.records[before + 1 + i];
    EXPECT_EQ(r.kind, uint16_t(EventKind::kMalloc)) << i;
    EXPECT_EQ(r.addr, 0xdead0000 + i * 64) << i;
    EXPECT_EQ(r.size_bytes, 777u) << i;
  }
  EXPECT_EQ(dropped_records(&reg), 3u) << "those past what can wait are counted";
}

// A drain cut short leaves records in the buffers; the sender's watermark must not pass the
// oldest of them. Each buffer's first unread record is its oldest, in whichever chunk it lies
// (a drain that ends at a chunk's last slot leaves the next chunk's first), and the clocks
// come back whole from their 48 bits.
TEST(EventBuffer, OldestUnreadIsTheFirstRecordLeftInAnyBuffer) {
  BufferRegistry reg;
  // Clocks just below a 2^48 wrap, so that unwrapping matters.
  const uint64_t base = (uint64_t{5} << 48) - 1000;
  const uint64_t now = base + 10'000'000;
  // Thread A: two chunks and a bit, a wide record (32 MiB) every 100th; thread B: three
  // records older than all of A's but its first.
  const uint64_t a_count = 2 * kChunkSlots + 100;
  std::vector<uint64_t> a_clocks, b_clocks = {base + 5, base + 7, base + 9};
  std::thread([&] {
    for (uint64_t i = 0; i < a_count; ++i) {
      const uint64_t clock = base + i * 3;
      a_clocks.push_back(clock);
      record_event(&reg, false, EventKind::kMalloc, 0x10000 + i * 64,
                   i % 100 == 0 ? (uint64_t{1} << 25) : 48, clock);
    }
  }).join();
  const uint32_t a_tid = reg.head.load()->tid.load();
  std::thread([&] {
    for (uint64_t clock : b_clocks) record_event(&reg, false, EventKind::kFree, 0x20000, 0, clock);
  }).join();

  uint64_t oldest = 0;
  ASSERT_TRUE(oldest_unread_clock(&reg, now, &oldest));
  EXPECT_EQ(oldest, base) << "A's first record";
  // One record at a time, so that some drain ends at a chunk's last record: after each, the
  // oldest is the smaller of the two buffers' next records.
  size_t a_read = 0, b_read = 0;
  DrainResult out;
  for (;;) {
    out.clear();
    if (drain_buffers(&reg, 1, &out) == 0) break;
    (out.threads[0].tid == a_tid ? a_read : b_read) += 1;
    const bool any = a_read < a_clocks.size() || b_read < b_clocks.size();
    uint64_t expected = UINT64_MAX;
    if (a_read < a_clocks.size()) expected = a_clocks[a_read];
    if (b_read < b_clocks.size()) expected = std::min(expected, b_clocks[b_read]);
    ASSERT_EQ(oldest_unread_clock(&reg, now, &oldest), any) << a_read << " " << b_read;
    if (any) {
      ASSERT_EQ(oldest, expected) << "after " << a_read << " of A, " << b_read << " of B";
    }
  }
  EXPECT_EQ(a_read, a_count);
  EXPECT_EQ(b_read, b_clocks.size());
  EXPECT_FALSE(oldest_unread_clock(&reg, now, &oldest)) << "nothing left";
}

}  // namespace
}  // namespace memtap
