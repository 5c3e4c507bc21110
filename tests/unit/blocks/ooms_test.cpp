// The OOM log: each refused request with the blocks live at it, a request refused again (as
// PyTorch's allocator asks again after giving its cache back) counted once.
#include "monitor/engine/blocks/ooms.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "monitor/model/mem_event.h"

namespace memtap::blocks {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr uint32_t kCudaMalloc = 7, kCuMemCreate = 8;

MemEvent refusal(int64_t ts, uint64_t size, uint32_t api = kCudaMalloc, uint32_t tid = 11) {
  MemEvent e;
  e.kind = MemEventKind::kOom;
  e.ts_ns = ts;
  e.pid = 100;
  e.tid = tid;
  e.device = 0;
  e.size_bytes = size;
  e.name = api;
  return e;
}

MemEvent live_block(int64_t ts, uint64_t addr, uint64_t size) {
  MemEvent e;
  e.kind = MemEventKind::kOomTopAlloc;
  e.ts_ns = ts;
  e.pid = 100;
  e.device = 0;
  e.addr = addr;
  e.size_bytes = size;
  return e;
}

TEST(OomLog, ARequestRefusedAgainAfterTheCacheIsGivenBackIsOneOomWithItsLastBlocks) {
  OomLog log;
  // cudaMalloc refused with two segments cached and a tensor live; the allocator gives the
  // segments back (not OOM events) and asks again 10 ms later: refused with the tensor alone.
  log.add(refusal(1000 * kMs, 300ull << 30));
  log.add(live_block(1000 * kMs, 0xa000, 128 << 20));
  log.add(live_block(1000 * kMs, 0xb000, 64 << 20));
  log.add(live_block(1000 * kMs, 0xc000, 32 << 20));
  log.add(refusal(1010 * kMs, 300ull << 30));
  log.add(live_block(1010 * kMs, 0xc000, 32 << 20));

  const OomResult r = log.result(100, 0);
  EXPECT_EQ(r.count, 1u);
  ASSERT_EQ(r.kept.size(), 1u);
  const Oom& oom = r.kept[0];
  EXPECT_EQ(oom.ts_ns, 1000 * kMs);
  EXPECT_EQ(oom.refusals, 2u);
  EXPECT_EQ(oom.last_ts_ns, 1010 * kMs);
  ASSERT_EQ(oom.top.size(), 1u);
  EXPECT_EQ(oom.top[0].addr, 0xc000u);
}

TEST(OomLog, OtherRequestsAndLateRetriesAreOomsOfTheirOwn) {
  OomLog log;
  log.add(refusal(1000 * kMs, 1 << 30));
  log.add(refusal(1001 * kMs, 2 << 30));                                          // another size
  log.add(refusal(1002 * kMs, 2 << 30, kCuMemCreate));                            // another API
  log.add(refusal(1003 * kMs, 2 << 30, kCuMemCreate, 12));                        // another thread
  log.add(refusal(1003 * kMs + kRefusedAgainNs + 1, 2 << 30, kCuMemCreate, 12));  // too late
  // Within the window of the last refusal, not the first: a chain of retries is one OOM.
  log.add(refusal(1003 * kMs + 2 * kRefusedAgainNs, 2 << 30, kCuMemCreate, 12));

  const OomResult r = log.result(100, 0);
  EXPECT_EQ(r.count, 5u);
  ASSERT_EQ(r.kept.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r.kept[i].refusals, 1u) << i;
  EXPECT_EQ(r.kept[4].refusals, 2u);
  EXPECT_EQ(r.kept[4].last_ts_ns, 1003 * kMs + 2 * kRefusedAgainNs);
}

TEST(OomLog, ARetryOfAnOomPastThoseKeptIsNotCountedAgain) {
  OomLog log;
  for (size_t i = 0; i < kKeptOoms + 2; ++i) {
    log.add(refusal(int64_t(i) * 10 * kRefusedAgainNs, 1 << 20));
    log.add(refusal(int64_t(i) * 10 * kRefusedAgainNs + kMs, 1 << 20));
  }
  const OomResult r = log.result(100, 0);
  EXPECT_EQ(r.count, kKeptOoms + 2);
  ASSERT_EQ(r.kept.size(), kKeptOoms);
  for (const Oom& oom : r.kept) EXPECT_EQ(oom.refusals, 2u);
}

}  // namespace
}  // namespace memtap::blocks
