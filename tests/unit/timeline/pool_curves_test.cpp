// The framework pool's curves (curve_rules.h): Active above Allocated while a block's free
// is pending on another stream, a device pool's SNAPSHOT moving Reserved at once, and the
// samples standing for the pool on a device with no PTA block.
#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <vector>

#include "monitor/engine/timeline/timeline.h"
#include "tests/unit/timeline/timeline_events.h"

namespace memtap::timeline {

bool operator==(const CurvePoint& a, const CurvePoint& b);
void PrintTo(const CurvePoint& p, std::ostream* os);

namespace {

using namespace testing_events;
using Points = std::vector<CurvePoint>;

constexpr uint32_t kPid = 7;
constexpr int32_t kDev = 0;
constexpr int64_t KiB = 1024, MiB = 1024 * 1024;
constexpr uint64_t kSeg = 0x7f00'0000'0000;

SeriesId overall(const Timeline& t, Curve curve, int32_t device = kDev) {
  return t.find({kPid, device, curve, GroupBy::kOverall, 0});
}

Points curve(const Timeline& t, Curve c, int32_t device = kDev) {
  return all_points(t, overall(t, c, device));
}

// A 2 MiB segment; blocks A (1 MiB) and B (512 KiB); B freed on a side stream (pending)
// while C (256 KiB) is allocated, then B completes; A freed at once.
std::vector<MemEvent> side_stream_free() {
  return {
      malloc_at(1, kPid, kDev, Layer::kHal, kSeg, 2 * MiB),
      pta(MemEventKind::kMalloc, 2, kPid, kDev, kSeg, 1 * MiB, 1 * MiB, 2 * MiB),
      pta(MemEventKind::kMalloc, 3, kPid, kDev, kSeg + MiB, 512 * KiB, 1536 * KiB, 2 * MiB),
      pending_free_at(4, kPid, kDev, kSeg + MiB, 512 * KiB),
      pta(MemEventKind::kMalloc, 5, kPid, kDev, kSeg + 1536 * KiB, 256 * KiB, 1280 * KiB, 2 * MiB),
      completed_at(6, kPid, kDev, kSeg + MiB, 512 * KiB),
      pta(MemEventKind::kFree, 7, kPid, kDev, kSeg, 1 * MiB, 256 * KiB, 2 * MiB),
  };
}

TEST(PoolCurves, ActiveStaysAboveAllocatedFromAPendingFreeToItsCompletion) {
  Timeline t;
  feed(t, side_stream_free());
  EXPECT_EQ(curve(t, Curve::kAllocated),
            (Points{{1, 0}, {2, MiB}, {3, 1536 * KiB}, {4, MiB}, {5, 1280 * KiB}, {7, 256 * KiB}}));
  // Between t=4 and t=6 B's 512 KiB are Active but not Allocated; equal before and after.
  EXPECT_EQ(
      curve(t, Curve::kActive),
      (Points{
          {1, 0}, {2, MiB}, {3, 1536 * KiB}, {5, 1792 * KiB}, {6, 1280 * KiB}, {7, 256 * KiB}}));
  EXPECT_NE(overall(t, Curve::kActive), overall(t, Curve::kAllocated));
  // Fragmentation stays Reserved - Allocated: a pending block is not in use.
  EXPECT_EQ(t.data(overall(t, Curve::kFragmentation)).value(), 2 * MiB - 256 * KiB);

  ScopeSummary s = t.summary(kPid, kDev);
  EXPECT_EQ(s.peak[int(Curve::kAllocated)], (CurvePoint{3, 1536 * KiB}));
  EXPECT_EQ(s.peak[int(Curve::kActive)], (CurvePoint{5, 1792 * KiB}));
  EXPECT_EQ(s.final_bytes[int(Curve::kActive)], 256 * KiB);
  EXPECT_EQ(s.pending_frees, 1u);
  EXPECT_EQ(s.pending_bytes, 0);
  EXPECT_EQ(s.clamped_frees, 0u);
  EXPECT_EQ(s.events, 7u);
}

// Two pending blocks of 2^63 - 1 bytes (hostile or corrupt input): their pending bytes
// saturate on the way up, and give back no more than they hold on the way down, so Active
// never drops below 0.
TEST(PoolCurves, PendingBytesPastInt64NeverGoNegative) {
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  const uint64_t b = kSeg + uint64_t(kHuge);
  Timeline t;
  feed(t, {pta(MemEventKind::kMalloc, 1, kPid, kDev, kSeg, kHuge, kHuge, kHuge),
           pta(MemEventKind::kMalloc, 2, kPid, kDev, b, kHuge, kHuge, kHuge),
           pending_free_at(3, kPid, kDev, kSeg, kHuge), pending_free_at(4, kPid, kDev, b, kHuge),
           completed_at(5, kPid, kDev, kSeg, kHuge), completed_at(6, kPid, kDev, b, kHuge)});
  for (const CurvePoint& p : curve(t, Curve::kActive)) EXPECT_GE(p.value_bytes, 0) << p.ts_ns;
  const ScopeSummary s = t.summary(kPid, kDev);
  EXPECT_EQ(s.pending_bytes, 0);
  EXPECT_EQ(s.final_bytes[int(Curve::kActive)], 0);
}

TEST(PoolCurves, ActiveSharesAllocatedsSeriesWhileNothingIsPending) {
  Timeline t;
  std::vector<MemEvent> events = side_stream_free();
  events[3].free_pending = false;
  events.erase(events.begin() + 5);  // its completion
  feed(t, events);
  EXPECT_EQ(overall(t, Curve::kActive), overall(t, Curve::kAllocated));
  EXPECT_EQ(t.series(kPid, kDev, GroupBy::kOverall).size(), size_t(kCurveCount));
}

TEST(PoolCurves, APendingBlockStillPendingAtTheEndKeepsActiveUp) {
  Timeline t;
  std::vector<MemEvent> events = side_stream_free();
  events.erase(events.begin() + 5);
  feed(t, events);
  ScopeSummary s = t.summary(kPid, kDev);
  EXPECT_EQ(s.final_bytes[int(Curve::kAllocated)], 256 * KiB);
  EXPECT_EQ(s.final_bytes[int(Curve::kActive)], 768 * KiB);
  EXPECT_EQ(s.pending_bytes, 512 * KiB);
}

TEST(PoolCurves, ACompletionWithNothingPendingChangesNothingAndIsCounted) {
  Timeline t;
  feed(t, {pta(MemEventKind::kMalloc, 1, kPid, kDev, 0x100, 100, 100, 4096),
           completed_at(2, kPid, kDev, 0x100, 100),  // the block is still allocated
           pta(MemEventKind::kFree, 3, kPid, kDev, 0x100, 100, 0, 4096),
           completed_at(4, kPid, kDev, 0x100, 100)});  // its FREE was not pending
  EXPECT_EQ(curve(t, Curve::kAllocated), (Points{{1, 100}, {3, 0}}));
  EXPECT_EQ(curve(t, Curve::kActive), (Points{{1, 100}, {3, 0}}));
  EXPECT_EQ(t.summary(kPid, kDev).clamped_frees, 2u);
  EXPECT_EQ(t.summary(kPid, kDev).events, 4u);
}

TEST(PoolCurves, PendingIsOnlyAFrameworkBlocksState) {
  Timeline t;
  MemEvent heap_free = free_at(2, kPid, kHostDevice, Layer::kHost, 0x10, 64);
  heap_free.free_pending = true;
  feed(t, {malloc_at(1, kPid, kHostDevice, Layer::kHost, 0x10, 64), heap_free});
  EXPECT_EQ(curve(t, Curve::kActive, kHostDevice), (Points{{1, 64}, {2, 0}}));
  EXPECT_EQ(overall(t, Curve::kActive, kHostDevice), overall(t, Curve::kAllocated, kHostDevice));
}

TEST(PoolCurves, APoolSnapshotMovesReservedWithoutABlockEvent) {
  Timeline t;
  feed(t, {
              malloc_at(1, kPid, kDev, Layer::kHal, kSeg, 2 * MiB),
              pta(MemEventKind::kMalloc, 2, kPid, kDev, kSeg, 1 * MiB, 1 * MiB, 2 * MiB),
              // The pool got a 4 MiB segment (its block events will say so later).
              pool_snapshot_at(3, kPid, kDev, 1 * MiB, 6 * MiB),
              pta(MemEventKind::kFree, 4, kPid, kDev, kSeg, 1 * MiB, 0, 6 * MiB),
              // empty_cache: both segments go back, no block event.
              pool_snapshot_at(5, kPid, kDev, 0, 0),
          });
  EXPECT_EQ(curve(t, Curve::kReserved), (Points{{1, 2 * MiB}, {3, 6 * MiB}, {5, 0}}));
  // The samples' allocated does not override the blocks once there are blocks.
  EXPECT_EQ(curve(t, Curve::kAllocated), (Points{{1, 0}, {2, MiB}, {4, 0}}));
  EXPECT_EQ(t.summary(kPid, kDev).snapshots, 2u);
  EXPECT_EQ(t.summary(kPid, kDev).pool_snapshots, 2u);
}

TEST(PoolCurves, WithoutPoolBlocksTheSamplesAreThePool) {
  Timeline t;
  feed(t, {
              malloc_at(1, kPid, kDev, Layer::kHal, kSeg, 8 * MiB),
              pool_snapshot_at(2, kPid, kDev, 3 * MiB, 8 * MiB),  // step 1
              pool_snapshot_at(3, kPid, kDev, 5 * MiB, 8 * MiB),  // step 2
              malloc_at(4, kPid, kDev, Layer::kHal, kSeg + 8 * MiB, 4 * MiB),
              pool_snapshot_at(5, kPid, kDev, 2 * MiB, 12 * MiB),  // step 3
          });
  // Allocated is rewritten to the first sample from the start (the HAL bytes that stood in
  // were the driver's), then follows the samples; Reserved the samples' reserved; App
  // Reserved the driver's bytes.
  EXPECT_EQ(curve(t, Curve::kAllocated), (Points{{1, 3 * MiB}, {3, 5 * MiB}, {5, 2 * MiB}}));
  EXPECT_EQ(curve(t, Curve::kFragmentation), (Points{{1, 5 * MiB}, {3, 3 * MiB}, {5, 10 * MiB}}));
  EXPECT_EQ(curve(t, Curve::kReserved), (Points{{1, 8 * MiB}, {5, 12 * MiB}}));
  EXPECT_EQ(curve(t, Curve::kAppReserved), (Points{{1, 8 * MiB}, {4, 12 * MiB}}));
  EXPECT_EQ(overall(t, Curve::kActive), overall(t, Curve::kAllocated));
  ScopeSummary s = t.summary(kPid, kDev);
  EXPECT_EQ(s.peak[int(Curve::kAllocated)], (CurvePoint{3, 5 * MiB}));
  EXPECT_EQ(s.fragmentation.worst_gap_bytes, 10 * MiB);
  EXPECT_EQ(s.fragmentation.worst_ts_ns, 5);

  // A PTA block (the trace tracker attached, reporting the live blocks): the blocks rule
  // Allocated from then on, without rewriting the samples' history.
  feed(t, {pta(MemEventKind::kMalloc, 6, kPid, kDev, kSeg, 1 * MiB, 1 * MiB, 12 * MiB)});
  EXPECT_EQ(curve(t, Curve::kAllocated),
            (Points{{1, 3 * MiB}, {3, 5 * MiB}, {5, 2 * MiB}, {6, 1 * MiB}}));
}

// A torch_npu profile samples each component's pool on its own (memory_record.csv: PTA,
// then GE at other times): the device's pool is the sum of each one's newest figures.
TEST(PoolCurves, SamplesOfSeveralComponentsAddUp) {
  constexpr uint32_t kPtaName = 1, kGeName = 2;
  auto sample = [](int64_t ts, uint32_t name, int64_t allocated, int64_t reserved) {
    MemEvent e = pool_snapshot_at(ts, kPid, kDev, allocated, reserved);
    e.name = name;
    return e;
  };
  Timeline t;
  feed(t, {
              sample(1, kPtaName, 4 * MiB, 8 * MiB),
              sample(2, kPtaName, 5 * MiB, 8 * MiB),
              sample(3, kGeName, 1 * MiB, 2 * MiB),
              sample(4, kGeName, 0, 2 * MiB),
              sample(5, kPtaName, 6 * MiB, 10 * MiB),
          });
  EXPECT_EQ(curve(t, Curve::kAllocated),
            (Points{{1, 4 * MiB}, {2, 5 * MiB}, {3, 6 * MiB}, {4, 5 * MiB}, {5, 6 * MiB}}));
  EXPECT_EQ(curve(t, Curve::kReserved), (Points{{1, 8 * MiB}, {3, 10 * MiB}, {5, 12 * MiB}}));
  EXPECT_EQ(t.summary(kPid, kDev).pool_snapshots, 5u);
}

TEST(PoolCurves, AHostOrNonPoolSnapshotIsNoPoolSample) {
  Timeline t;
  MemEvent other = pool_snapshot_at(2, kPid, kDev, 5 * MiB, 9 * MiB);
  other.layer = Layer::kOther;  // msMemScope's SNAPSHOT rows
  feed(t, {malloc_at(1, kPid, kDev, Layer::kHal, kSeg, 8 * MiB), other});
  EXPECT_EQ(curve(t, Curve::kAllocated), (Points{{1, 8 * MiB}}));
  EXPECT_EQ(curve(t, Curve::kReserved), (Points{{1, 8 * MiB}}));
}

}  // namespace
}  // namespace memtap::timeline
