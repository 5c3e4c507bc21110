// The curves of small hand-built event sequences, point by point: the host (heap, anonymous
// mappings, RSS samples) and a device with a framework pool over driver memory, Group By,
// and the clamping of FREEs that free more than is live.
#include <gtest/gtest.h>

#include <ostream>
#include <vector>

#include "monitor/engine/timeline/timeline.h"
#include "tests/unit/timeline/timeline_events.h"

namespace memtap::timeline {

bool operator==(const CurvePoint& a, const CurvePoint& b) {
  return a.ts_ns == b.ts_ns && a.value_bytes == b.value_bytes;
}
void PrintTo(const CurvePoint& p, std::ostream* os) {
  *os << "(" << p.ts_ns << ", " << p.value_bytes << ")";
}

namespace {

using namespace testing_events;
using Points = std::vector<CurvePoint>;

constexpr uint32_t kPid = 42;
constexpr int64_t KiB = 1024, MiB = 1024 * 1024;

SeriesId overall(const Timeline& t, int32_t device, Curve curve) {
  return t.find({kPid, device, curve, GroupBy::kOverall, 0});
}

Points curve(const Timeline& t, int32_t device, Curve c) {
  return all_points(t, overall(t, device, c));
}

Points group(const Timeline& t, int32_t device, GroupBy by, uint64_t value,
             BlockClass blocks = BlockClass::kNone) {
  SeriesId id = t.find({kPid, device, Curve::kAllocated, by, value, blocks});
  EXPECT_NE(id, kNoSeries) << "no series for group " << value;
  return id == kNoSeries ? Points{} : all_points(t, id);
}

TEST(TimelineCurves, HostHeapMappingsAndRssSamples) {
  Timeline t;
  feed(t, {
              malloc_at(1, kPid, kHostDevice, Layer::kHost, 0x1000, 100),
              mmap_at(2, kPid, 0x7000'0000, 4096, false),
              malloc_at(3, kPid, kHostDevice, Layer::kHost, 0x2000, 50),
              snapshot_at(4, kPid, kHostDevice, 10000),
              free_at(5, kPid, kHostDevice, Layer::kHost, 0x1000, 100),
              mmap_at(6, kPid, 0x7000'0000, 4096, true),
              snapshot_at(7, kPid, kHostDevice, 9000),
          });
  EXPECT_EQ(curve(t, kHostDevice, Curve::kAllocated), (Points{{1, 100}, {3, 150}, {5, 50}}));
  EXPECT_EQ(curve(t, kHostDevice, Curve::kReserved),
            (Points{{1, 100}, {2, 4196}, {3, 4246}, {5, 4146}, {6, 50}}));
  // Reserved stands in for the RSS until the first sample, then the samples rule.
  EXPECT_EQ(curve(t, kHostDevice, Curve::kAppReserved),
            (Points{{1, 100}, {2, 4196}, {3, 4246}, {4, 10000}, {7, 9000}}));
  EXPECT_EQ(curve(t, kHostDevice, Curve::kFragmentation), (Points{{1, 0}, {2, 4096}, {6, 0}}));
  EXPECT_EQ(overall(t, kHostDevice, Curve::kActive), overall(t, kHostDevice, Curve::kAllocated));

  EXPECT_EQ(group(t, kHostDevice, GroupBy::kLayer, uint64_t(Layer::kHost)),
            (Points{{1, 100}, {3, 150}, {5, 50}}));
  EXPECT_EQ(group(t, kHostDevice, GroupBy::kLayer, kHostMmapGroup), (Points{{2, 4096}, {6, 0}}));
  EXPECT_EQ(t.series(kPid, kHostDevice, GroupBy::kLayer).size(), 2u);
  EXPECT_EQ(t.series(kPid, kHostDevice, GroupBy::kOverall).size(), size_t(kCurveCount));

  ScopeSummary s = t.summary(kPid, kHostDevice);
  EXPECT_EQ(s.peak[int(Curve::kAllocated)], (CurvePoint{3, 150}));
  EXPECT_EQ(s.peak[int(Curve::kActive)], (CurvePoint{3, 150}));
  EXPECT_EQ(s.peak[int(Curve::kReserved)], (CurvePoint{3, 4246}));
  EXPECT_EQ(s.peak[int(Curve::kAppReserved)], (CurvePoint{4, 10000}));
  EXPECT_EQ(s.final_bytes[int(Curve::kAllocated)], 50);
  EXPECT_EQ(s.final_bytes[int(Curve::kReserved)], 50);
  EXPECT_EQ(s.final_bytes[int(Curve::kAppReserved)], 9000);
  // The mapping came at 2; the gap it made was first there for a malloc at 3.
  EXPECT_EQ(s.fragmentation.worst_ts_ns, 3);
  EXPECT_EQ(s.fragmentation.worst_reserved_bytes, 4246);
  EXPECT_EQ(s.fragmentation.worst_allocated_bytes, 150);
  EXPECT_EQ(s.fragmentation.worst_gap_bytes, 4096);
  EXPECT_EQ(s.fragmentation.final_gap_bytes, 0);
  EXPECT_EQ(s.events, 7u);
  EXPECT_EQ(s.mallocs, 3u);
  EXPECT_EQ(s.frees, 2u);
  EXPECT_EQ(s.snapshots, 2u);
  EXPECT_EQ(s.clamped_frees, 0u);
  EXPECT_EQ(s.first_ts_ns, 1);
  EXPECT_EQ(s.last_ts_ns, 7);
}

// A PyTorch-like device: the pool takes a 2 MiB segment (HAL), hands out blocks from it
// (PTA, with Attr used/total), grows by a 4 MiB segment, and gives it back.
std::vector<MemEvent> pool_on_device(int32_t dev, uint32_t owner_a, uint32_t owner_b) {
  const uint64_t s1 = 0x7f00'0000'0000, s2 = 0x7f10'0000'0000;
  MemEvent hal_free = free_at(8, kPid, dev, Layer::kHal, s2, 4 * MiB);
  return {
      malloc_at(1, kPid, dev, Layer::kHal, s1, 2 * MiB),
      pta(MemEventKind::kMalloc, 2, kPid, dev, s1, 512 * KiB, 512 * KiB, 2 * MiB, owner_a, 7),
      pta(MemEventKind::kMalloc, 3, kPid, dev, s1 + 512 * KiB, 256 * KiB, 768 * KiB, 2 * MiB,
          owner_b, 7),
      // FREE rows do not repeat the owner or the stream.
      pta(MemEventKind::kFree, 4, kPid, dev, s1, 512 * KiB, 256 * KiB, 2 * MiB),
      malloc_at(5, kPid, dev, Layer::kHal, s2, 4 * MiB),
      pta(MemEventKind::kMalloc, 6, kPid, dev, s2, 3 * MiB, 3 * MiB + 256 * KiB, 6 * MiB, owner_a,
          9),
      pta(MemEventKind::kFree, 7, kPid, dev, s2, 3 * MiB, 256 * KiB, 6 * MiB),
      hal_free,
      pta(MemEventKind::kFree, 9, kPid, dev, s1 + 512 * KiB, 256 * KiB, 0, 2 * MiB),
  };
}

// The largest pid on the host makes the scope key that also marks "no scope looked up
// yet": its events get a scope of their own (they dereferenced the mark's null scope).
TEST(TimelineCurves, TheLargestPidIsAScopeLikeAnyOther) {
  constexpr uint32_t kLargestPid = 4294967295u;
  Timeline t;
  feed(t, {
              malloc_at(1, kLargestPid, kHostDevice, Layer::kHost, 0x1000, 100),
              malloc_at(2, kLargestPid, kHostDevice, Layer::kHost, 0x2000, 50),
              free_at(3, kLargestPid, kHostDevice, Layer::kHost, 0x1000, 100),
          });
  EXPECT_EQ(
      all_points(t, t.find({kLargestPid, kHostDevice, Curve::kAllocated, GroupBy::kOverall, 0})),
      (Points{{1, 100}, {2, 150}, {3, 50}}));
}

TEST(TimelineCurves, DeviceWithFrameworkPoolOverDriverMemory) {
  Timeline t;
  feed(t, pool_on_device(0, 11, 12));
  // Allocated counts PTA blocks; before the first one (t=1) that is 0, not the segment.
  EXPECT_EQ(curve(t, 0, Curve::kAllocated), (Points{{1, 0},
                                                    {2, 512 * KiB},
                                                    {3, 768 * KiB},
                                                    {4, 256 * KiB},
                                                    {6, 3 * MiB + 256 * KiB},
                                                    {7, 256 * KiB},
                                                    {9, 0}}));
  // Reserved: the HAL bytes until the pool reports its total, then the total.
  EXPECT_EQ(curve(t, 0, Curve::kReserved), (Points{{1, 2 * MiB}, {6, 6 * MiB}, {9, 2 * MiB}}));
  // App Reserved: the driver-level bytes (the pool's total lags until its next event).
  EXPECT_EQ(curve(t, 0, Curve::kAppReserved), (Points{{1, 2 * MiB}, {5, 6 * MiB}, {8, 2 * MiB}}));
  EXPECT_EQ(curve(t, 0, Curve::kFragmentation), (Points{{1, 2 * MiB},
                                                        {2, 1536 * KiB},
                                                        {3, 1280 * KiB},
                                                        {4, 1792 * KiB},
                                                        {6, 2 * MiB + 768 * KiB},
                                                        {7, 5 * MiB + 768 * KiB},
                                                        {9, 2 * MiB}}));

  ScopeSummary s = t.summary(kPid, 0);
  EXPECT_EQ(s.peak[int(Curve::kAllocated)], (CurvePoint{6, 3 * MiB + 256 * KiB}));
  EXPECT_EQ(s.peak[int(Curve::kReserved)], (CurvePoint{6, 6 * MiB}));
  EXPECT_EQ(s.peak[int(Curve::kAppReserved)], (CurvePoint{5, 6 * MiB}));
  // The widest gap (5.75 MiB after the FREE at t=7) left nobody short: nothing was asked
  // for until the end. The worst moment is the widest gap at an allocation, t=6's.
  EXPECT_EQ(s.fragmentation.worst_ts_ns, 6);
  EXPECT_EQ(s.fragmentation.worst_reserved_bytes, 6 * MiB);
  EXPECT_EQ(s.fragmentation.worst_allocated_bytes, 3 * MiB + 256 * KiB);
  EXPECT_EQ(s.fragmentation.worst_gap_bytes, 2 * MiB + 768 * KiB);
  EXPECT_EQ(s.fragmentation.final_gap_bytes, 2 * MiB);
  EXPECT_EQ(s.pool_used_mismatches, 0u);
  EXPECT_EQ(s.clamped_frees, 0u);
}

TEST(TimelineCurves, DeviceGroupByLayerOwnerAndStream) {
  Timeline t;
  feed(t, pool_on_device(3, 11, 12));
  EXPECT_EQ(group(t, 3, GroupBy::kLayer, uint64_t(Layer::kHal)),
            (Points{{1, 2 * MiB}, {5, 6 * MiB}, {8, 2 * MiB}}));
  EXPECT_EQ(group(t, 3, GroupBy::kLayer, uint64_t(Layer::kPta)), (Points{{2, 512 * KiB},
                                                                         {3, 768 * KiB},
                                                                         {4, 256 * KiB},
                                                                         {6, 3 * MiB + 256 * KiB},
                                                                         {7, 256 * KiB},
                                                                         {9, 0}}));
  // The FREE at t=4 carries no owner; the block's MALLOC said owner 11.
  EXPECT_EQ(group(t, 3, GroupBy::kOwner, 11),
            (Points{{2, 512 * KiB}, {4, 0}, {6, 3 * MiB}, {7, 0}}));
  EXPECT_EQ(group(t, 3, GroupBy::kOwner, 12), (Points{{3, 256 * KiB}, {9, 0}}));
  EXPECT_EQ(group(t, 3, GroupBy::kStream, 7),
            (Points{{2, 512 * KiB}, {3, 768 * KiB}, {4, 256 * KiB}, {9, 0}}));
  EXPECT_EQ(group(t, 3, GroupBy::kStream, 9), (Points{{6, 3 * MiB}, {7, 0}}));
  // Owners split what Allocated counts (PTA blocks); the HAL blocks have their own split.
  std::vector<SeriesInfo> owners = t.series(kPid, 3, GroupBy::kOwner);
  ASSERT_EQ(owners.size(), 2u);
  EXPECT_EQ(owners[0].key.group, 11u);
  EXPECT_EQ(owners[1].key.group, 12u);
  EXPECT_EQ(owners[0].key.blocks, BlockClass::kFramework);
  EXPECT_EQ(group(t, 3, GroupBy::kOwner, 0, BlockClass::kDriver),
            (Points{{1, 2 * MiB}, {5, 6 * MiB}, {8, 2 * MiB}}));
  EXPECT_EQ(t.find({kPid, 3, Curve::kAllocated, GroupBy::kOwner, 0}), kNoSeries);
}

TEST(TimelineCurves, OwnerAndStreamSeriesAddUpToAllocatedAtEveryEvent) {
  Timeline t;
  std::vector<MemEvent> events;
  uint64_t state = 1;
  std::vector<std::pair<uint64_t, uint64_t>> live;  // addr, size
  int64_t ts = 0;
  for (int i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    ++ts;
    if (live.empty() || (state >> 60) < 9) {
      uint64_t addr = 0x1000 + uint64_t(i) * 0x100, size = 1 + (state >> 40) % 4096;
      MemEvent e = pta(MemEventKind::kMalloc, ts, kPid, 1, addr, size, -1, -1,
                       uint32_t((state >> 20) % 5), (state >> 30) % 3);
      events.push_back(e);
      live.push_back({addr, size});
    } else {
      size_t k = (state >> 8) % live.size();
      events.push_back(
          pta(MemEventKind::kFree, ts, kPid, 1, live[k].first, live[k].second, -1, -1));
      live.erase(live.begin() + ptrdiff_t(k));
    }
    feed(t, {events.back()});
    int64_t owners = 0, streams = 0;
    for (const SeriesInfo& s : t.series(kPid, 1, GroupBy::kOwner)) owners += t.data(s.id).value();
    for (const SeriesInfo& s : t.series(kPid, 1, GroupBy::kStream)) streams += t.data(s.id).value();
    int64_t allocated = t.data(overall(t, 1, Curve::kAllocated)).value();
    ASSERT_EQ(owners, allocated) << "event " << i;
    ASSERT_EQ(streams, allocated) << "event " << i;
  }
  EXPECT_EQ(t.summary(kPid, 1).clamped_frees, 0u);
}

TEST(TimelineCurves, DriverOnlyDeviceCountsHalBytesEverywhere) {
  Timeline t;
  feed(t, {malloc_at(10, kPid, 1, Layer::kHal, 0xa000, 1000),
           malloc_at(20, kPid, 1, Layer::kHal, 0xb000, 500),
           free_at(30, kPid, 1, Layer::kHal, 0xa000, 1000)});
  Points expected = {{10, 1000}, {20, 1500}, {30, 500}};
  EXPECT_EQ(curve(t, 1, Curve::kAllocated), expected);
  EXPECT_EQ(curve(t, 1, Curve::kReserved), expected);
  EXPECT_EQ(curve(t, 1, Curve::kAppReserved), expected);
  EXPECT_EQ(curve(t, 1, Curve::kFragmentation), (Points{{10, 0}}));
  EXPECT_EQ(group(t, 1, GroupBy::kOwner, 0), expected);
}

// Page-locked host memory is host memory in use: HOST_PINNED on "cpu", and in msMemScope's
// 2025 files HAL on "host" for the same blocks (the msinsight and smoke samples share them).
TEST(TimelineCurves, PinnedHostMemoryOfEitherSpellingIsAllocatedOnTheHost) {
  Timeline t;
  feed(t, {malloc_at(10, kPid, kHostDevice, Layer::kHost, 0x1000, 100),
           malloc_at(20, kPid, kHostDevice, Layer::kHostPinned, 0x12c0'8000'0000, 3000),
           malloc_at(30, kPid, kHostDevice, Layer::kHal, 0x12c0'9000'0000, 5000),
           free_at(40, kPid, kHostDevice, Layer::kHal, 0x12c0'9000'0000, 5000)});
  const Points expected = {{10, 100}, {20, 3100}, {30, 8100}, {40, 3100}};
  EXPECT_EQ(curve(t, kHostDevice, Curve::kAllocated), expected);
  EXPECT_EQ(curve(t, kHostDevice, Curve::kReserved), expected);
  EXPECT_EQ(group(t, kHostDevice, GroupBy::kLayer, uint64_t(Layer::kHal)),
            (Points{{30, 5000}, {40, 0}}));
  // Group By Owner splits what Allocated counts, the driver's host blocks included.
  EXPECT_EQ(group(t, kHostDevice, GroupBy::kOwner, 0, BlockClass::kHostHeap), expected);
  // On a device HAL stays the driver's device memory.
  feed(t, {malloc_at(50, kPid, 0, Layer::kHal, 0x12c0'a000'0000, 7000)});
  EXPECT_EQ(curve(t, kHostDevice, Curve::kAllocated), expected);
  EXPECT_EQ(curve(t, 0, Curve::kAllocated), (Points{{50, 7000}}));
  // A HAL FREE of no device (as those files write it) or of the host that freed no block
  // seen there frees no pinned bytes: it is counted as a FREE of more than was live.
  EXPECT_EQ(t.summary(kPid, kHostDevice).clamped_frees, 0u);
  feed(t, {free_at(60, kPid, kNoDevice, Layer::kHal, 0x12c1'0000'0000, 32768),
           free_at(70, kPid, kHostDevice, Layer::kHal, 0x12c1'0000'0000, 32768)});
  EXPECT_EQ(curve(t, kHostDevice, Curve::kAllocated), expected);
  EXPECT_EQ(t.summary(kPid, kHostDevice).clamped_frees, 2u);
  EXPECT_EQ(t.summary(kPid, kHostDevice).frees, 3u);
}

TEST(TimelineCurves, FreeOfMoreThanIsLiveClampsAtZeroAndIsCounted) {
  Timeline t;
  feed(t, {free_at(1, kPid, kHostDevice, Layer::kHost, 0x10, 100),  // MALLOC never seen
           malloc_at(2, kPid, kHostDevice, Layer::kHost, 0x20, 50),
           free_at(3, kPid, kHostDevice, Layer::kHost, 0x20, 80),  // frees more than live
           malloc_at(4, kPid, kHostDevice, Layer::kHost, 0x30, 10),
           free_at(5, kPid, kHostDevice, Layer::kHost, 0x30, 10)});
  EXPECT_EQ(curve(t, kHostDevice, Curve::kAllocated),
            (Points{{1, 0}, {2, 50}, {3, 0}, {4, 10}, {5, 0}}));
  EXPECT_EQ(group(t, kHostDevice, GroupBy::kOwner, 0),
            (Points{{1, 0}, {2, 50}, {3, 0}, {4, 10}, {5, 0}}));
  // One per FREE, though each clamped both the layer total and the group series.
  EXPECT_EQ(t.summary(kPid, kHostDevice).clamped_frees, 2u);
}

TEST(TimelineCurves, AbsurdSizesSaturateInsteadOfOverflowing) {
  Timeline t;
  feed(t, {malloc_at(1, kPid, kHostDevice, Layer::kHost, 0x10, UINT64_MAX),
           malloc_at(2, kPid, kHostDevice, Layer::kHost, 0x20, UINT64_MAX),
           mmap_at(3, kPid, 0x7000, UINT64_MAX, false)});
  EXPECT_EQ(t.summary(kPid, kHostDevice).final_bytes[int(Curve::kAllocated)], INT64_MAX);
  EXPECT_EQ(t.summary(kPid, kHostDevice).final_bytes[int(Curve::kReserved)], INT64_MAX);
}

TEST(TimelineCurves, PoolUsedThatDisagreesWithTheBlocksSeenIsCounted) {
  Timeline t;
  // The recording started after the pool had handed out 1000 bytes.
  feed(t, {pta(MemEventKind::kMalloc, 1, kPid, 0, 0x100, 100, 1100, 4096),
           pta(MemEventKind::kMalloc, 2, kPid, 0, 0x200, 100, 1200, 4096)});
  EXPECT_EQ(t.summary(kPid, 0).pool_used_mismatches, 2u);
  EXPECT_EQ(curve(t, 0, Curve::kAllocated), (Points{{1, 100}, {2, 200}}));
  EXPECT_EQ(curve(t, 0, Curve::kReserved), (Points{{1, 4096}}));
}

TEST(TimelineCurves, OwnersPastTheLimitShareTheOverflowSeries) {
  TimelineConfig config;
  config.max_groups = 2;
  Timeline t(config);
  for (uint32_t owner = 1; owner <= 4; ++owner) {
    MemEvent e = malloc_at(owner, kPid, kHostDevice, Layer::kHost, 0x100 * owner, 10);
    e.owner = owner;
    feed(t, {e});
  }
  std::vector<SeriesInfo> owners = t.series(kPid, kHostDevice, GroupBy::kOwner);
  ASSERT_EQ(owners.size(), 3u);
  EXPECT_EQ(owners[0].key.group, 1u);
  EXPECT_EQ(owners[1].key.group, 2u);
  EXPECT_EQ(owners[2].key.group, kOverflowGroup);
  EXPECT_EQ(t.data(owners[2].id).value(), 20);
  // The overflow owners' FREEs find their series through the labelled block.
  feed(t, {free_at(9, kPid, kHostDevice, Layer::kHost, 0x300, 10)});
  EXPECT_EQ(t.data(owners[2].id).value(), 10);
}

TEST(TimelineCurves, EventsOfNoDeviceAreTheHostsAndLateOnesAreTakenAsNow) {
  Timeline t;
  feed(t, {malloc_at(10, kPid, kNoDevice, Layer::kHost, 0x10, 5),
           malloc_at(5, kPid, kHostDevice, Layer::kHost, 0x20, 7),
           malloc_at(20, 99, 0, Layer::kHal, 0x20, 7)});
  ASSERT_EQ(t.scopes().size(), 2u);
  EXPECT_EQ(curve(t, kHostDevice, Curve::kAllocated), (Points{{10, 5}, {10, 12}}));
  EXPECT_EQ(t.summary(kPid, kHostDevice).out_of_order, 1u);
  EXPECT_EQ(t.scopes()[1].pid, 99u);
  EXPECT_EQ(t.scopes()[1].device, 0);
}

TEST(TimelineCurves, OtherEventKindsChangeNothing) {
  Timeline t;
  MemEvent op;
  op.kind = MemEventKind::kOpStart;
  op.pid = kPid;
  op.device = 0;
  feed(t, {op});
  EXPECT_TRUE(t.scopes().empty());
  EXPECT_EQ(t.stats().events, 1u);
}

}  // namespace
}  // namespace memtap::timeline
