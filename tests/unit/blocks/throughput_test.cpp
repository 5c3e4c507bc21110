// The live-block path's rate on one core, and memory that stays flat while finished
// blocks pile up. Prints the rate; asserts no timing (machines differ), only correctness
// and the memory bound. Named *Throughput* so the sanitizer runs leave it out.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "tests/unit/blocks/script.h"

namespace memtap::blocks::test {
namespace {

TEST(BlocksThroughput, TenMillionHeapEventsOnOneCoreWithBoundedMemory) {
  constexpr uint64_t kEvents = 10'000'000;
  constexpr uint64_t kLive = 8192;  // blocks live at once once warm
  constexpr size_t kChunk = 1 << 16;
  StringTable strings;
  uint32_t owners[8], stacks[64], names[16];
  for (int i = 0; i < 8; ++i) owners[i] = strings.intern("owner" + std::to_string(i) + "@inner");
  for (int i = 0; i < 64; ++i) stacks[i] = strings.intern("train.py(" + std::to_string(i) + "): f");
  for (int i = 0; i < 16; ++i) names[i] = strings.intern("aten::op" + std::to_string(i));

  BlockAnalyzer a(strings);
  std::vector<MemEvent> chunk(kChunk);
  uint64_t produced = 0, mallocs = 0, frees = 0, rng = 88172645463325252ull;
  size_t bytes_warm = 0;
  double seconds = 0;
  std::vector<uint64_t> ring(kLive);  // address of the block each ring slot holds
  while (produced < kEvents) {
    const size_t n = size_t(std::min<uint64_t>(kChunk, kEvents - produced));
    for (size_t i = 0; i < n; ++i) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      MemEvent& e = chunk[i];
      e = MemEvent{};
      e.ts_ns = int64_t(produced + i) * 100;
      e.pid = 7;
      e.tid = uint32_t(1 + rng % 4);
      e.device = kHostDevice;
      e.layer = Layer::kHost;
      // Warm-up fills the ring; then each free of the oldest block is followed by a malloc.
      const bool is_free = mallocs >= kLive && (produced + i) % 2 == 0;
      const uint64_t slot = (is_free ? frees : mallocs) % kLive;
      if (is_free) {
        e.kind = MemEventKind::kFree;
        e.addr = ring[slot];
        ++frees;
      } else {
        e.kind = MemEventKind::kMalloc;
        e.addr = 0x7f0000000000ull + ((mallocs * 48271) % (1 << 20)) * 64;  // addresses reused
        ring[slot] = e.addr;
        e.size_bytes = 16 + rng % 4096;
        e.owner = owners[rng % 8];
        e.stack_python = stacks[(rng >> 8) % 64];
        e.name = names[(rng >> 16) % 16];
        ++mallocs;
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    a.add(chunk.data(), n);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    produced += n;
    if (bytes_warm == 0 && produced >= 2'000'000) bytes_warm = a.state_bytes();
  }
  const double rate = double(kEvents) / seconds;
  std::printf("[ rate     ] %llu events in %.3f s: %.2f million events/s on one core\n",
              (unsigned long long)kEvents, seconds, rate / 1e6);
  std::printf("[ memory   ] state %zu bytes after 2M events, %zu after 10M\n", bytes_warm,
              a.state_bytes());

  EXPECT_EQ(a.events(), kEvents);
  const LifetimeResult l = a.lifetimes(7, kHostDevice);
  ASSERT_EQ(l.layers.size(), 1u);
  EXPECT_EQ(l.layers[0].allocs, mallocs);
  EXPECT_EQ(l.layers[0].frees, frees);
  EXPECT_EQ(l.layers[0].unmatched_frees, 0u);
  EXPECT_EQ(l.layers[0].live_blocks, kLive);
  EXPECT_EQ(a.peak(7, kHostDevice).blocks, kLive);
  // Four million more finished blocks than at 2M events, and not a byte more state.
  EXPECT_EQ(a.state_bytes(), bytes_warm);
}

}  // namespace
}  // namespace memtap::blocks::test
