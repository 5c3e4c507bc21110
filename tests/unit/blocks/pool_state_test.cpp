// Pool state (segments, blocks, gaps, fragmentation) and the worst fragmentation moment.
#include <gtest/gtest.h>

#include "tests/unit/blocks/script.h"

namespace memtap::blocks::test {
namespace {

TEST(PoolState, HostMappingsAreSegmentsAndHeapBlocksInsideBelongToThem) {
  Script s;
  s.mmap(1, 0x10000, 0x1000);
  s.mmap(2, 0x20000, 0x2000);
  s.malloc(3, 0x10000, 0x100, {"a", "", "op"});
  s.malloc(4, 0x10400, 0x200, {"b"});
  s.malloc(5, 0x50000, 0x80);  // in no mapping
  BlockAnalyzer a(s.strings);
  s.feed(a);

  const PoolState p = a.pool_state(100, kHostDevice);
  EXPECT_EQ(p.source, PoolSource::kHostMappings);
  EXPECT_EQ(p.ts_ns, 5);
  ASSERT_EQ(p.segments.size(), 2u);
  const PoolSegment& first = p.segments[0];
  EXPECT_EQ(first.addr, 0x10000u);
  EXPECT_EQ(first.size_bytes, 0x1000u);
  EXPECT_EQ(first.blocks, 2u);
  EXPECT_EQ(first.allocated_bytes, 0x300u);
  EXPECT_EQ(first.free_bytes, 0xD00u);  // 0x300 between the blocks, 0xA00 after
  EXPECT_EQ(first.largest_free_gap, 0xA00u);
  EXPECT_DOUBLE_EQ(first.fragmentation, 1.0 - double(0xA00) / double(0xD00));
  ASSERT_EQ(first.block_list.size(), 2u);
  EXPECT_EQ(first.block_list[0].addr, 0x10000u);
  EXPECT_EQ(s.strings.get(first.block_list[0].owner), "a");
  EXPECT_EQ(s.strings.get(first.block_list[0].name), "op");
  EXPECT_EQ(first.block_list[1].addr, 0x10400u);
  EXPECT_EQ(first.block_list[1].alloc_ts_ns, 4);
  const PoolSegment& second = p.segments[1];
  EXPECT_EQ(second.blocks, 0u);
  EXPECT_EQ(second.largest_free_gap, 0x2000u);
  EXPECT_DOUBLE_EQ(second.fragmentation, 0.0);

  EXPECT_EQ(p.reserved_bytes, 0x3000u);
  EXPECT_EQ(p.allocated_bytes, 0x300u);
  EXPECT_EQ(p.free_bytes, 0x2D00u);
  EXPECT_EQ(p.largest_free_gap, 0x2000);
  EXPECT_DOUBLE_EQ(p.fragmentation, 1.0 - double(0x2000) / double(0x2D00));
  EXPECT_EQ(p.unsegmented_blocks, 1u);
  EXPECT_EQ(p.unsegmented_bytes, 0x80u);

  EXPECT_TRUE(a.pool_state(100, kHostDevice, false).segments[0].block_list.empty());
}

TEST(PoolState, DeviceHalSegmentsHoldPtaBlocksAndPoolTotalIsReserved) {
  Script s;
  s.device = 0;
  s.layer = Layer::kHal;
  s.malloc(1, 0x7f0000000, 2 * kMiB);
  s.layer = Layer::kPta;
  s.malloc(2, 0x7f0000000, 512 * kKiB).pool_total = int64_t(2 * kMiB);
  s.malloc(3, 0x7f0000000 + kMiB, 256 * kKiB).pool_total = int64_t(2 * kMiB);
  BlockAnalyzer a(s.strings);
  s.feed(a);

  const PoolState p = a.pool_state(100, 0);
  EXPECT_EQ(p.source, PoolSource::kDeviceSegments);
  ASSERT_EQ(p.segments.size(), 1u);
  EXPECT_EQ(p.segments[0].blocks, 2u);
  EXPECT_EQ(p.segments[0].free_bytes, 1280 * kKiB);
  EXPECT_EQ(p.segments[0].largest_free_gap, 768 * kKiB);
  EXPECT_DOUBLE_EQ(p.segments[0].fragmentation, 0.4);
  EXPECT_EQ(p.reserved_bytes, 2 * kMiB);
  EXPECT_EQ(p.allocated_bytes, 768 * kKiB);
  EXPECT_EQ(p.free_bytes, 1280 * kKiB);
  EXPECT_EQ(p.largest_free_gap, int64_t(768 * kKiB));
  EXPECT_DOUBLE_EQ(p.fragmentation, 0.4);
}

// Block B's free waits for another stream: from its FREE to its FREE_COMPLETED it is a
// state of its own in its segment (neither allocated nor free), and no longer in the live
// set the peak and leaks count.
TEST(PoolState, ABlockWhoseFreeIsPendingIsNeitherAllocatedNorFree) {
  Script s;
  s.device = 0;
  const uint64_t seg = 0x7f0000000;
  s.layer = Layer::kHal;
  s.malloc(1, seg, 2 * kMiB);
  s.layer = Layer::kPta;
  s.malloc(2, seg, 512 * kKiB, {"a"});
  s.malloc(3, seg + 512 * kKiB, 256 * kKiB, {"b", "", "mm"});
  s.free_pending(4, seg + 512 * kKiB);
  BlockAnalyzer a(s.strings);
  s.feed(a);

  PoolState p = a.pool_state(100, 0);
  EXPECT_EQ(p.source, PoolSource::kDeviceSegments);
  EXPECT_EQ(p.allocated_bytes, 512 * kKiB);
  EXPECT_EQ(p.pending_bytes, 256 * kKiB);
  EXPECT_EQ(p.pending_blocks, 1u);
  EXPECT_EQ(p.free_bytes, 1280 * kKiB);
  ASSERT_EQ(p.segments.size(), 1u);
  const PoolSegment& seg0 = p.segments[0];
  EXPECT_EQ(seg0.blocks, 2u);
  EXPECT_EQ(seg0.allocated_bytes, 512 * kKiB);
  EXPECT_EQ(seg0.pending_bytes, 256 * kKiB);
  EXPECT_EQ(seg0.free_bytes, 1280 * kKiB);  // the gap starts after the pending block
  EXPECT_EQ(seg0.largest_free_gap, 1280 * kKiB);
  ASSERT_EQ(seg0.block_list.size(), 2u);
  EXPECT_FALSE(seg0.block_list[0].pending);
  EXPECT_TRUE(seg0.block_list[1].pending);
  EXPECT_EQ(seg0.block_list[1].free_ns, 4);
  EXPECT_EQ(seg0.block_list[1].alloc_ts_ns, 3);
  EXPECT_EQ(s.strings.get(seg0.block_list[1].owner), "b");
  EXPECT_EQ(s.strings.get(seg0.block_list[1].name), "mm");
  // Allocated purposes: its lifetime ended at the FREE.
  const PeakResult peak = a.peak(100, 0);
  EXPECT_EQ(peak.bytes, 768 * kKiB);
  for (const LayerTotals& layer : a.lifetimes(100, 0).layers) {
    if (layer.layer != Layer::kPta) continue;
    EXPECT_EQ(layer.live_bytes, 512 * kKiB);
    EXPECT_EQ(layer.frees, 1u);
  }

  // The pool takes it back: free bytes, one gap.
  s.free_completed(5, seg + 512 * kKiB);
  BlockAnalyzer b(s.strings);
  s.feed(b);
  p = b.pool_state(100, 0);
  EXPECT_EQ(p.pending_bytes, 0u);
  EXPECT_EQ(p.pending_blocks, 0u);
  EXPECT_EQ(p.free_bytes, 1536 * kKiB);
  EXPECT_EQ(p.segments[0].blocks, 1u);
  EXPECT_EQ(p.segments[0].largest_free_gap, 1536 * kKiB);
}

TEST(PoolState, ANewBlockWherePendingOneWasEndsThePendingOne) {
  Script s;
  s.device = 0;
  s.layer = Layer::kHal;
  s.malloc(1, 0x10000, kMiB);
  s.layer = Layer::kPta;
  s.malloc(2, 0x10000, 4096);
  s.free_pending(3, 0x10000);
  s.malloc(4, 0x10000, 8192);  // the completion was lost
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const PoolState p = a.pool_state(100, 0);
  EXPECT_EQ(p.pending_blocks, 0u);
  EXPECT_EQ(p.allocated_bytes, 8192u);
}

TEST(PoolState, APoolSnapshotIsThePoolsReserved) {
  Script s;
  s.device = 0;
  s.layer = Layer::kPta;
  s.malloc(1, 0x1000, 100).pool_total = 1000;
  s.pool_snapshot(2, 100, 5000);
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const PoolState p = a.pool_state(100, 0);
  EXPECT_EQ(p.source, PoolSource::kPoolTotalOnly);
  EXPECT_EQ(p.reserved_bytes, 5000u);
  EXPECT_EQ(p.free_bytes, 4900u);
}

TEST(PoolState, PoolTotalWithoutSegmentAddressesKnowsNoGaps) {
  Script s;
  s.device = 3;
  s.layer = Layer::kPta;
  s.malloc(1, 0x1000, 100).pool_total = 1000;
  s.malloc(2, 0x2000, 300).pool_total = 1000;
  BlockAnalyzer a(s.strings);
  s.feed(a);
  const PoolState p = a.pool_state(100, 3);
  EXPECT_EQ(p.source, PoolSource::kPoolTotalOnly);
  EXPECT_EQ(p.reserved_bytes, 1000u);
  EXPECT_EQ(p.allocated_bytes, 400u);
  EXPECT_EQ(p.free_bytes, 600u);
  EXPECT_EQ(p.largest_free_gap, -1);
  EXPECT_EQ(p.fragmentation, -1);
  EXPECT_TRUE(p.segments.empty());
}

TEST(PoolState, ADeviceWithoutAPoolAndAnUnknownOneHaveNoPool) {
  Script s;
  s.device = 0;
  s.layer = Layer::kHal;
  s.malloc(1, 0x1000, 100);
  BlockAnalyzer a(s.strings);
  s.feed(a);
  EXPECT_EQ(a.pool_state(100, 0).source, PoolSource::kNoPool);
  EXPECT_EQ(a.pool_state(100, 0).reserved_bytes, 0u);
  EXPECT_EQ(a.pool_state(5, 5).source, PoolSource::kNoPool);
}

TEST(PoolState, APastInstantIsReplayed) {
  Script s;
  s.mmap(10, 0x10000, 0x1000);
  s.malloc(20, 0x10000, 0x100);
  s.malloc(30, 0x10800, 0x100);
  s.munmap(40, 0x10000);
  s.sort();
  const PoolState at25 =
      replay_pool_state(s.events.data(), s.events.size(), s.strings, 100, kHostDevice, 25);
  EXPECT_EQ(at25.ts_ns, 25);
  ASSERT_EQ(at25.segments.size(), 1u);
  EXPECT_EQ(at25.segments[0].blocks, 1u);
  EXPECT_EQ(at25.segments[0].largest_free_gap, 0xF00u);
  const PoolState at30 =
      replay_pool_state(s.events.data(), s.events.size(), s.strings, 100, kHostDevice, 30);
  EXPECT_EQ(at30.segments[0].blocks, 2u);
  EXPECT_EQ(at30.segments[0].largest_free_gap, 0x700u);
  const PoolState at40 =
      replay_pool_state(s.events.data(), s.events.size(), s.strings, 100, kHostDevice, 40);
  EXPECT_EQ(at40.source, PoolSource::kNoPool);
  EXPECT_EQ(at40.unsegmented_blocks, 2u);
}

constexpr uint64_t kSeg1 = 0x100000000, kSeg2 = 0x200000000;

// The script's pool as the fragmentation query sees it after the last event (pid 100,
// device 0).
FragmentationResult fragmentation_after(Script& s) {
  BlockAnalyzer a(s.strings);
  s.feed(a);
  return a.fragmentation(100, 0);
}

// One 1 MiB segment with four 256 KiB blocks; the 2nd and 4th are freed (256 KiB of the
// 512 KiB free stranded); at t=8 the pool takes a second 1 MiB segment. The next event is
// the caller's, on layer PTA.
Script pool_that_grows_past_a_stranded_gap() {
  Script s;
  s.device = 0;
  s.layer = Layer::kHal;
  s.malloc(1, kSeg1, kMiB);
  s.layer = Layer::kPta;
  for (int i = 0; i < 4; ++i)
    s.malloc(2 + i, kSeg1 + i * 256 * kKiB, 256 * kKiB).pool_total = int64_t(kMiB);
  s.free(6, kSeg1 + 256 * kKiB).pool_total = int64_t(kMiB);
  s.free(7, kSeg1 + 768 * kKiB).pool_total = int64_t(kMiB);
  s.layer = Layer::kHal;
  s.malloc(8, kSeg2, kMiB);
  s.layer = Layer::kPta;
  return s;
}

// The pool of pool_that_grows_past_a_stranded_gap: the moment before its second segment is
// the worst.
TEST(Fragmentation, TheWorstMomentIsTheOneBeforeTheNewSegment) {
  Script s = pool_that_grows_past_a_stranded_gap();
  s.malloc(9, kSeg2, kMiB).pool_total = int64_t(2 * kMiB);
  s.free(10, kSeg1).pool_total = int64_t(2 * kMiB);
  s.free(11, kSeg1 + 512 * kKiB).pool_total = int64_t(2 * kMiB);

  const FragmentationResult f = fragmentation_after(s);
  EXPECT_EQ(f.source, PoolSource::kDeviceSegments);
  EXPECT_EQ(f.evaluations, 2u);  // before t=8 (new segment) and t=9 (new pool_total)
  EXPECT_EQ(f.skipped_evaluations, 0u);
  ASSERT_TRUE(f.worst.found);
  EXPECT_EQ(f.worst.ts_ns, 8);
  EXPECT_EQ(f.worst.reserved_bytes, kMiB);
  EXPECT_EQ(f.worst.allocated_bytes, 512 * kKiB);
  EXPECT_EQ(f.worst.free_bytes, 512 * kKiB);
  EXPECT_EQ(f.worst.largest_free_gap, int64_t(256 * kKiB));
  EXPECT_DOUBLE_EQ(f.worst.fragmentation, 0.5);
  EXPECT_EQ(f.worst.segments, 1u);
  // Now: segment 1 empty, segment 2 full.
  EXPECT_EQ(f.now.ts_ns, 11);
  EXPECT_EQ(f.now.free_bytes, kMiB);
  EXPECT_EQ(f.now.largest_free_gap, int64_t(kMiB));
  EXPECT_DOUBLE_EQ(f.now.fragmentation, 0.0);
  EXPECT_EQ(f.most_free.ts_ns, 11);
}

// The same pool, then the end of a run: every block freed, the second segment given back,
// the first kept. Just before the segment goes, and at the end, more free bytes lie outside
// the largest gap than before t=8, but nothing was being asked for: t=8 stays the worst.
TEST(Fragmentation, ASegmentGivenBackAndThePresentAreNeverTheWorst) {
  Script s = pool_that_grows_past_a_stranded_gap();
  s.malloc(9, kSeg2, 512 * kKiB).pool_total = int64_t(2 * kMiB);
  s.free(10, kSeg1).pool_total = int64_t(2 * kMiB);
  s.free(11, kSeg1 + 512 * kKiB).pool_total = int64_t(2 * kMiB);
  s.free(12, kSeg2).pool_total = int64_t(2 * kMiB);
  s.layer = Layer::kHal;
  s.free(13, kSeg2);  // empty_cache: 2 MiB free in two 1 MiB gaps just before

  const FragmentationResult f = fragmentation_after(s);
  EXPECT_EQ(f.evaluations, 3u);  // before t=8, t=9 and t=13
  ASSERT_TRUE(f.worst.found);
  EXPECT_EQ(f.worst.ts_ns, 8);
  EXPECT_EQ(f.worst.free_bytes, 512 * kKiB);
  EXPECT_EQ(f.worst.largest_free_gap, int64_t(256 * kKiB));
  // The moment before the segment went had the most free bytes, and counts for that.
  EXPECT_EQ(f.most_free.ts_ns, 13);
  EXPECT_EQ(f.most_free.free_bytes, 2 * kMiB);
}

TEST(Fragmentation, EvaluationsRightAfterOneAreSkippedWhenThePoolIsLarge) {
  Script s;
  s.device = 0;
  s.layer = Layer::kHal;
  s.malloc(1, 0x100000000, 64 * kMiB);
  s.layer = Layer::kPta;
  for (int i = 0; i < 40; ++i) s.malloc(2 + i, 0x100000000 + i * kMiB, kMiB);
  s.layer = Layer::kHal;
  s.malloc(100, 0x200000000, kMiB);  // evaluated: 41 pool events since none
  s.malloc(101, 0x300000000, kMiB);  // 1 event x 16 < 42 live: skipped
  const FragmentationResult f = fragmentation_after(s);
  EXPECT_EQ(f.evaluations, 1u);
  EXPECT_EQ(f.skipped_evaluations, 1u);
}

// A pool whose blocks all came in one burst with no look due (a snapshot's blocks before its
// trace: a segment, then its blocks, then nothing asks for memory): no moment that asked for
// memory was looked at with the blocks in place, so the worst is the present, whose gaps are
// the ones known (the report said "largest free gap ?" of such a snapshot).
TEST(Fragmentation, WithNoMomentLookedAtThePresentsGapsStandIn) {
  Script s;
  s.device = 0;
  s.layer = Layer::kHal;
  s.malloc(1, kSeg1, 17 * kMiB);
  s.layer = Layer::kPta;
  for (int i = 0; i < 16; ++i) s.malloc(2, kSeg1 + i * kMiB, kMiB).pool_total = int64_t(17 * kMiB);
  const FragmentationResult f = fragmentation_after(s);
  ASSERT_TRUE(f.worst.found);
  EXPECT_EQ(f.worst.ts_ns, f.now.ts_ns);
  EXPECT_EQ(f.worst.free_bytes, kMiB);
  EXPECT_EQ(f.worst.largest_free_gap, int64_t(kMiB));
}

// The only moments looked at found the pool full (the first segment's block, then the pool
// growing), and the blocks that leave gaps came with no look due (LLM-inference's OOM
// snapshot: the report said "reserved 11.0 GiB, allocated 11.0 GiB, largest free gap 0 B; at
// the end 4.3 MiB unused", where its largest inactive block is 1.98 MiB). A worst without a
// free byte says nothing of the gaps: the present's stand in.
TEST(Fragmentation, AWorstWithoutFreeBytesGivesWayToThePresentsGaps) {
  Script s;
  s.device = 0;
  s.layer = Layer::kHal;
  s.malloc(1, kSeg1, kMiB);
  s.layer = Layer::kPta;
  s.malloc(2, kSeg1, kMiB).pool_total = int64_t(kMiB);
  s.layer = Layer::kHal;
  s.malloc(3, kSeg2, 2 * kMiB);
  s.layer = Layer::kPta;
  s.malloc(4, kSeg2, 512 * kKiB).pool_total = int64_t(3 * kMiB);
  s.malloc(5, kSeg2 + kMiB, 512 * kKiB).pool_total = int64_t(3 * kMiB);
  const FragmentationResult f = fragmentation_after(s);
  ASSERT_TRUE(f.worst.found);
  EXPECT_EQ(f.worst.ts_ns, f.now.ts_ns);
  EXPECT_EQ(f.worst.free_bytes, kMiB);
  EXPECT_EQ(f.worst.largest_free_gap, int64_t(512 * kKiB));
}

}  // namespace
}  // namespace memtap::blocks::test
