// The pool at an instant from real recordings: a device's HAL segments with the PTA blocks
// inside them, the free gaps, the same figures as the engine's pool, a host heap that has no
// segments said in so many words, and the segment a block belongs to.
#include "monitor/viewdata/pool_data.h"

#include <gtest/gtest.h>

#include "monitor/engine/analyzer.h"
#include "monitor/engine/blocks/block_analyzer.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/device_rows.h"
#include "tests/unit/viewdata/recording_builder.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

using viewdata::PoolData;
using viewdata::PoolRequest;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSeg0 = 0x12c000000000;
constexpr uint64_t kSeg1 = 0x12c000400000;

PoolData pool(viewdata::DataSource& source, const PoolRequest& r) {
  return test::block_query(source, [&](viewdata::BlockQueries& q) { return compute_pool(q, r); });
}

// Two 2 MiB driver segments; the framework hands out blocks inside them; one segment ends
// with a block freed in its middle (fragmentation).
struct DevicePool {
  test::TempDir dir;
  test::RecordingBuilder b;
  std::string path;
  DevicePool() {
    test::DeviceRows d(b);
    b.malloc(0.5, 0x1000, 100);  // the host heap, not part of the device's pool
    d.malloc(1, "HAL", kSeg0, 2 * kMiB);
    d.malloc(1, "HAL", kSeg1, 2 * kMiB);
    d.malloc(2, "PTA", kSeg0, 512 * 1024, "weights", "aten::empty");
    d.malloc(3, "PTA", kSeg0 + 512 * 1024, 512 * 1024, "activations");
    d.malloc(4, "PTA", kSeg0 + 1024 * 1024, 256 * 1024, "activations");
    d.malloc(5, "PTA", kSeg1, 1 * kMiB, "optimizer");
    d.free(6, "PTA", kSeg0 + 512 * 1024);  // a 512 KiB hole in segment 0
    b.step(7, 1);
    path = dir.file("device.db");
    b.write(path);
    d.append_to(path);
  }
};

TEST(PoolData, SegmentsFromHalWithPtaBlocksInsideAndFreeGaps) {
  DevicePool p;
  auto source = test::open_loaded(p.path);
  ASSERT_NE(source, nullptr);
  PoolRequest r;
  r.pid = p.b.pid();
  r.device = 0;
  r.at_ns = p.b.at(6.5);
  const PoolData d = pool(*source, r);
  EXPECT_EQ(d.source, blocks::PoolSource::kDeviceSegments);
  ASSERT_EQ(d.segments.size(), 2u);
  EXPECT_EQ(d.segments_live, 2u);
  const viewdata::PoolSegmentData& s0 = d.segments[0];
  EXPECT_EQ(s0.segment.addr, kSeg0);
  EXPECT_EQ(s0.segment.layer, Layer::kHal);
  ASSERT_EQ(s0.blocks.size(), 2u);
  EXPECT_EQ(s0.blocks[0].owner, "weights");
  EXPECT_EQ(s0.blocks[0].name, "aten::empty");
  EXPECT_EQ(s0.blocks[1].addr, kSeg0 + kMiB);
  ASSERT_EQ(s0.gaps.size(), 2u);  // the freed hole, and the end of the segment
  EXPECT_EQ(s0.gaps[0].addr, kSeg0 + 512 * 1024);
  EXPECT_EQ(s0.gaps[0].size_bytes, 512 * 1024u);
  EXPECT_EQ(s0.gaps[1].size_bytes, 768 * 1024u);
  EXPECT_EQ(s0.largest_free_gap, 768 * 1024u);
  EXPECT_EQ(s0.free_bytes, 1280 * 1024u);
  EXPECT_NEAR(s0.fragmentation, 1 - 768.0 / 1280.0, 1e-9);
  EXPECT_EQ(d.segments[1].allocated_bytes, kMiB);
  EXPECT_EQ(d.reserved_bytes, 4 * kMiB);
  EXPECT_EQ(d.allocated_bytes, 512 * 1024 + 256 * 1024 + kMiB);
  EXPECT_EQ(d.live_blocks, 5u);  // 2 HAL + 3 PTA on the device (the host heap is not)

  // Before the hole was made, segment 0 had one gap.
  r.at_ns = p.b.at(5.5);
  const PoolData before = pool(*source, r);
  ASSERT_EQ(before.segments.size(), 2u);
  EXPECT_EQ(before.segments[0].blocks.size(), 3u);
  EXPECT_EQ(before.segments[0].gaps.size(), 1u);

  // A block leads to its segment; the segment to itself.
  EXPECT_EQ(viewdata::pool_segment_of(d, d.segments[1].blocks[0].id), 1);
  EXPECT_EQ(viewdata::pool_segment_of(d, d.segments[0].segment.id), 0);
  EXPECT_EQ(viewdata::pool_segment_of(d, 123456), -1);
}

TEST(PoolData, AtTheEndTheFiguresAreTheEnginesPool) {
  DevicePool p;
  auto source = test::open_loaded(p.path);
  ASSERT_NE(source, nullptr);
  const blocks::PoolState engine = test::engine_query(*source, [&](const viewdata::EngineView& e) {
    return e.analyzer.blocks().pool_state(p.b.pid(), 0);
  });
  PoolRequest r;
  r.pid = p.b.pid();
  r.device = 0;
  r.at_ns = p.b.at(7);
  const PoolData d = pool(*source, r);
  EXPECT_EQ(d.source, engine.source);
  ASSERT_EQ(d.segments.size(), engine.segments.size());
  for (size_t i = 0; i < d.segments.size(); ++i) {
    EXPECT_EQ(d.segments[i].segment.addr, engine.segments[i].addr);
    EXPECT_EQ(d.segments[i].blocks.size(), engine.segments[i].blocks);
    EXPECT_EQ(d.segments[i].allocated_bytes, engine.segments[i].allocated_bytes);
    EXPECT_EQ(d.segments[i].free_bytes, engine.segments[i].free_bytes);
    EXPECT_EQ(d.segments[i].largest_free_gap, engine.segments[i].largest_free_gap);
  }
  EXPECT_EQ(int64_t(d.largest_free_gap), engine.largest_free_gap);
  EXPECT_DOUBLE_EQ(d.fragmentation, engine.fragmentation);
}

// b's and d's recording with a step at 4 ms, opened, and device 0's pool the window draws
// then.
struct LoadedPool {
  std::unique_ptr<viewdata::DataSource> source;
  PoolData pool;
};

LoadedPool device_pool_at_4ms(const test::TempDir& dir, test::RecordingBuilder& b,
                              test::DeviceRows& d) {
  b.step(4, 1);
  const std::string path = dir.file("expandable.db");
  b.write(path);
  d.append_to(path);
  LoadedPool out;
  out.source = test::open_loaded(path);
  if (!out.source) return out;
  PoolRequest r;
  r.pid = b.pid();
  r.device = 0;
  r.at_ns = b.at(4);
  out.pool = pool(*out.source, r);
  return out;
}

// PyTorch's expandable segments map their pages one cuMemMap at a time, each a HAL block of
// its own, and a block runs on from one page into the next: its bytes count in each page it
// covers, in the window's pool and in the engine's alike. A segment that merely follows
// another without touching it keeps its own blocks.
TEST(PoolData, ABlockAcrossTheContiguousPagesOfAnExpandableSegmentCountsInEach) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::DeviceRows d(b);
  d.malloc(1, "HAL", kSeg0, 2 * kMiB);                        // page 1
  d.malloc(1, "HAL", kSeg0 + 2 * kMiB, 2 * kMiB);             // page 2, right after it
  d.malloc(1, "HAL", kSeg0 + 8 * kMiB, 2 * kMiB);             // a segment further on
  d.malloc(2, "PTA", kSeg0 + kMiB, 3 * kMiB, "activations");  // the last MiB of page 1, all of 2
  d.malloc(3, "PTA", kSeg0 + 8 * kMiB, kMiB, "weights");
  const LoadedPool loaded = device_pool_at_4ms(dir, b, d);
  ASSERT_NE(loaded.source, nullptr);
  const PoolData& got = loaded.pool;
  viewdata::DataSource* source = loaded.source.get();
  ASSERT_EQ(got.segments.size(), 3u);
  EXPECT_EQ(got.segments[0].allocated_bytes, kMiB);
  EXPECT_EQ(got.segments[0].free_bytes, kMiB);
  ASSERT_EQ(got.segments[1].blocks.size(), 1u);
  EXPECT_EQ(got.segments[1].blocks[0].addr, kSeg0 + 2 * kMiB);  // its part, drawn from the start
  EXPECT_EQ(got.segments[1].blocks[0].id, got.segments[0].blocks[0].id);
  EXPECT_EQ(got.segments[1].allocated_bytes, 2 * kMiB);
  EXPECT_EQ(got.segments[1].free_bytes, 0u);
  EXPECT_EQ(got.segments[2].allocated_bytes, kMiB);
  EXPECT_EQ(got.allocated_bytes, 4 * kMiB);
  EXPECT_EQ(got.free_bytes, 2 * kMiB);

  const blocks::PoolState engine = test::engine_query(*source, [&](const viewdata::EngineView& e) {
    return e.analyzer.blocks().pool_state(b.pid(), 0);
  });
  ASSERT_EQ(engine.segments.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(engine.segments[i].allocated_bytes, got.segments[i].allocated_bytes) << i;
    EXPECT_EQ(engine.segments[i].free_bytes, got.segments[i].free_bytes) << i;
  }
  ASSERT_EQ(engine.segments[1].block_list.size(), 1u);
  EXPECT_EQ(engine.segments[1].block_list[0].addr, kSeg0 + 2 * kMiB);
  EXPECT_EQ(engine.segments[1].block_list[0].size_bytes, 2 * kMiB);
}

// The same pages as PyTorch's recordings name them (cuMemMap): one segment, as PyTorch's
// expandable segment is one reserved range it carves blocks from across pages. Free bytes on
// both sides of a page boundary are one gap; a mapping further on, or a cudaMalloc right
// after a mapping, is a segment of its own. The window and the engine agree.
TEST(PoolData, TheContiguousMappedPagesOfAnExpandableSegmentAreOneSegment) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::DeviceRows d(b);
  for (int page = 0; page < 3; ++page)
    d.malloc(1, "HAL", kSeg0 + page * 2 * kMiB, 2 * kMiB, "", "cuMemMap");
  d.malloc(1, "HAL", kSeg0 + 6 * kMiB, 2 * kMiB, "", "cudaMalloc");  // right after: its own
  d.malloc(1, "HAL", kSeg0 + 10 * kMiB, 2 * kMiB, "", "cuMemMap");   // further on: its own
  d.malloc(2, "PTA", kSeg0, kMiB, "weights");                        // page 1's first MiB
  d.malloc(2, "PTA", kSeg0 + 5 * kMiB, kMiB, "activations");         // page 3's second MiB
  d.malloc(3, "PTA", kSeg0 + 10 * kMiB, kMiB, "weights");
  const LoadedPool loaded = device_pool_at_4ms(dir, b, d);
  ASSERT_NE(loaded.source, nullptr);
  const PoolData& got = loaded.pool;
  viewdata::DataSource* source = loaded.source.get();
  ASSERT_EQ(got.segments.size(), 3u);
  EXPECT_EQ(got.segments_live, 3u);
  EXPECT_EQ(got.segments[0].segment.addr, kSeg0);
  EXPECT_EQ(got.segments[0].segment.size_bytes, 6 * kMiB);
  EXPECT_EQ(got.segments[0].blocks.size(), 2u);
  EXPECT_EQ(got.segments[0].free_bytes, 4 * kMiB);
  EXPECT_EQ(got.segments[0].largest_free_gap, 4 * kMiB);    // 1 MiB of page 1, all 2, 1 of 3
  EXPECT_EQ(got.segments[1].segment.size_bytes, 2 * kMiB);  // the cudaMalloc
  EXPECT_EQ(got.segments[2].segment.addr, kSeg0 + 10 * kMiB);
  EXPECT_EQ(got.largest_free_gap, 4 * kMiB);

  const blocks::PoolState engine = test::engine_query(*source, [&](const viewdata::EngineView& e) {
    return e.analyzer.blocks().pool_state(b.pid(), 0);
  });
  ASSERT_EQ(engine.segments.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(engine.segments[i].addr, got.segments[i].segment.addr) << i;
    EXPECT_EQ(engine.segments[i].size_bytes, got.segments[i].segment.size_bytes) << i;
    EXPECT_EQ(engine.segments[i].free_bytes, got.segments[i].free_bytes) << i;
    EXPECT_EQ(engine.segments[i].largest_free_gap, got.segments[i].largest_free_gap) << i;
  }
  EXPECT_EQ(engine.largest_free_gap, int64_t(4 * kMiB));
  EXPECT_DOUBLE_EQ(engine.fragmentation, got.fragmentation);
}

TEST(PoolData, AHostHeapHasNoSegmentsAndListsItsLargestBlocks) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 100, "small");
  b.malloc(2, 0x2000, 3000, "big");
  b.malloc(3, 0x4000, 50);
  b.free(4, 0x4000);
  const std::string path = dir.file("heap.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  PoolRequest r;
  r.pid = b.pid();
  r.at_ns = b.at(3.5);
  const PoolData d = pool(*source, r);
  EXPECT_EQ(d.source, blocks::PoolSource::kNoPool);
  EXPECT_TRUE(d.segments.empty());
  EXPECT_EQ(d.live_blocks, 3u);
  EXPECT_EQ(d.live_bytes, 3150u);
  ASSERT_EQ(d.largest_live.size(), 3u);
  EXPECT_EQ(d.largest_live[0].owner, "big");
}

TEST(PoolData, HostMappingsAreTheSegmentsOfTheHeapBlocksInThem) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x7f0000000000, 1 << 20, "", "", /*mmap=*/true);
  b.malloc(2, 0x7f0000000010, 4096, "inside");
  b.malloc(3, 0x1000, 64, "outside");
  const std::string path = dir.file("mapped.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  PoolRequest r;
  r.pid = b.pid();
  r.at_ns = b.at(3);
  const PoolData d = pool(*source, r);
  EXPECT_EQ(d.source, blocks::PoolSource::kHostMappings);
  ASSERT_EQ(d.segments.size(), 1u);
  ASSERT_EQ(d.segments[0].blocks.size(), 1u);
  EXPECT_EQ(d.segments[0].blocks[0].owner, "inside");
  EXPECT_EQ(d.unsegmented_blocks, 1u);
}

TEST(PoolData, HostMappingsWithoutHeapBlocksAreNotAPool) {
  // Python's arenas: mappings whose blocks no hook sees. Drawn as segments they were rows of
  // empty bars; they are counted, and the host says it has no pool segments.
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x7f0000000000, 1 << 20, "", "", /*mmap=*/true);
  b.malloc(2, 0x7f0000200000, 1 << 20, "", "", /*mmap=*/true);
  b.malloc(3, 0x1000, 64, "heap");
  const std::string path = dir.file("arenas.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  PoolRequest r;
  r.pid = b.pid();
  r.at_ns = b.at(3.5);
  const PoolData d = pool(*source, r);
  EXPECT_EQ(d.source, blocks::PoolSource::kNoPool);
  EXPECT_TRUE(d.segments.empty());
  EXPECT_EQ(d.empty_mappings, 2u);
  EXPECT_EQ(d.empty_mapping_bytes, 2u << 20);
  ASSERT_FALSE(d.largest_live.empty());
  EXPECT_EQ(d.largest_live[0].size_bytes, 1u << 20);
}

}  // namespace
}  // namespace memtap
