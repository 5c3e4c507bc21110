// The block lifetime graph's data from real recordings: only the blocks live in the range,
// the largest N of them with the count of all, the selected block kept, the compressed
// address axis, and the detail panel's text.
#include "monitor/viewdata/lifetime_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "monitor/viewdata/block_detail.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/device_rows.h"
#include "tests/unit/viewdata/recording_builder.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

using viewdata::AddressAxis;
using viewdata::compress_addresses;
using viewdata::LifetimeData;
using viewdata::LifetimeRequest;

LifetimeData lifetime(viewdata::DataSource& source, const LifetimeRequest& r) {
  return test::block_query(source,
                           [&](viewdata::BlockQueries& q) { return compute_lifetime(q, r); });
}

std::vector<uint64_t> sizes(const LifetimeData& d) {
  std::vector<uint64_t> out;
  for (const auto& b : d.blocks) out.push_back(b.size_bytes);
  return out;
}

TEST(LifetimeData, OnlyTheBlocksLiveInTheRange) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 100, "early");  // freed before the range
  b.free(2, 0x1000);
  b.malloc(3, 0x2000, 200, "during");  // live across it
  b.malloc(5, 0x3000, 300, "inside");  // allocated and freed inside it
  b.free(6, 0x3000);
  b.malloc(9, 0x4000, 400, "late");  // allocated after it
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  LifetimeRequest r;
  r.pid = b.pid();
  r.t0_ns = b.at(4);
  r.t1_ns = b.at(7);
  const LifetimeData d = lifetime(*source, r);
  EXPECT_EQ(sizes(d), (std::vector<uint64_t>{300, 200}));
  EXPECT_EQ(d.matching_blocks, 2u);
  EXPECT_EQ(d.matching_bytes, 500u);
  EXPECT_EQ(d.blocks[1].free_ns, viewdata::kStillLive);
  ASSERT_EQ(d.owners.size(), 2u);
  EXPECT_EQ(d.owners[0].owner, "inside");
}

TEST(LifetimeData, BoundedToTheLargestWithTheCountOfAll) {
  test::TempDir dir;
  test::RecordingBuilder b;
  for (int i = 0; i < 50; ++i) b.malloc(1 + i * 0.1, 0x10000 + uint64_t(i) * 0x1000, 16 + i);
  const std::string path = dir.file("r.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  LifetimeRequest r;
  r.pid = b.pid();
  r.t0_ns = b.at(0);
  r.t1_ns = b.at(100);
  r.max_blocks = 10;
  const LifetimeData d = lifetime(*source, r);
  ASSERT_EQ(d.blocks.size(), 10u);
  EXPECT_EQ(d.blocks.front().size_bytes, 65u);
  EXPECT_EQ(d.blocks.back().size_bytes, 56u);
  EXPECT_EQ(d.matching_blocks, 50u);
  EXPECT_TRUE(d.blocks.front().stack_python.empty());

  // The selected block is drawn though it is small, and found when outside the range.
  const int64_t smallest = 1;  // ids in allocation order: the first (16 B) block
  r.selected = smallest;
  const LifetimeData s = lifetime(*source, r);
  ASSERT_EQ(s.blocks.size(), 11u);
  EXPECT_EQ(s.blocks.back().id, smallest);
  ASSERT_TRUE(s.selected.has_value());
  r.t1_ns = r.t0_ns = b.at(0.5);  // before it
  const LifetimeData outside = lifetime(*source, r);
  EXPECT_TRUE(outside.blocks.empty());
  ASSERT_TRUE(outside.selected.has_value());
  EXPECT_EQ(outside.selected->size_bytes, 16u);
}

// The graph draws the blocks in their order: the driver's segments (HAL) first, so that the
// framework's blocks (PTA) inside them lie on top, each largest first. A block as large as
// its segment and listed before it (as a PyTorch snapshot lists them) came first by size and
// id, and the segment drawn over it hid it.
TEST(LifetimeData, TheDriversSegmentsComeFirstAndTheBlocksInsideThemOnTop) {
  constexpr uint64_t kMiB = 1 << 20;
  constexpr uint64_t kSeg0 = 0x7f0000000000, kSeg1 = 0x7f0000800000;
  test::TempDir dir;
  test::RecordingBuilder b;
  test::DeviceRows d(b);
  b.malloc(0.5, 0x1000, 100);
  d.malloc(1, "PTA", kSeg0, 2 * kMiB, "weights");  // the whole segment, before it
  d.malloc(1, "HAL", kSeg0, 2 * kMiB);
  d.malloc(2, "HAL", kSeg1, 4 * kMiB);
  d.malloc(3, "PTA", kSeg1, kMiB, "activations");
  const std::string path = dir.file("device.db");
  b.write(path);
  d.append_to(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  LifetimeRequest r;
  r.pid = b.pid();
  r.device = 0;
  r.t0_ns = b.at(0);
  r.t1_ns = b.at(10);
  const LifetimeData data = lifetime(*source, r);
  std::vector<std::pair<Layer, uint64_t>> order;
  for (const auto& block : data.blocks) order.emplace_back(block.layer, block.size_bytes);
  EXPECT_EQ(order, (std::vector<std::pair<Layer, uint64_t>>{{Layer::kHal, 4 * kMiB},
                                                            {Layer::kHal, 2 * kMiB},
                                                            {Layer::kPta, 2 * kMiB},
                                                            {Layer::kPta, kMiB}}));
}

TEST(AddressAxis, CompressionKeepsTheOrderAndCollapsesGaps) {
  // A heap near 0x55..., mappings near 0x7f... and a device pool: terabytes apart.
  const AddressAxis axis = compress_addresses({{0x7f0000001000, 4096},
                                               {0x550000000000, 64},
                                               {0x550000000100, 64},
                                               {0x7f0000000000, 1 << 12},
                                               {0x12c000000000, 1 << 30}});
  ASSERT_EQ(axis.spans.size(), 3u);  // the heap's two blocks and the adjacent mappings merge
  EXPECT_EQ(axis.spans[0].lo, 0x12c000000000u);
  EXPECT_EQ(axis.spans[1].lo, 0x550000000000u);
  EXPECT_EQ(axis.spans[1].hi, 0x550000000140u);
  EXPECT_EQ(axis.spans[2].hi, 0x7f0000002000u);
  // Order kept: higher addresses higher on the axis, everywhere.
  const uint64_t addrs[] = {0x12c000000000, 0x12c000100000, 0x550000000000, 0x550000000100,
                            0x600000000000, 0x7f0000000000, 0x7f0000001fff};
  for (size_t i = 1; i < std::size(addrs); ++i)
    EXPECT_LT(axis.y_of(addrs[i - 1]), axis.y_of(addrs[i])) << i;
  // Even the 320-byte heap gets a visible share beside the 1 GiB pool, and gaps are small.
  EXPECT_GT(axis.spans[1].y1 - axis.spans[1].y0, 0.05);
  EXPECT_LT(axis.spans[1].y0 - axis.spans[0].y1, 0.05);
  EXPECT_EQ(axis.spans.back().y1, 1.0);
  // addr_at inverts y_of inside spans.
  EXPECT_NEAR(double(axis.addr_at(axis.y_of(0x550000000100))), double(0x550000000100), 2);
  EXPECT_TRUE(compress_addresses({}).spans.empty());
}

// A GPU pool's segments: 2 MiB apart here and there over 40 GiB (PyTorch's caching allocator
// on a real device), with a 3 GiB hole. Each small gap drawn to scale takes less height than a
// collapsed one would, so they stay: one span below the hole, one above, not hundreds (which
// drew the axis as a stack of gap markers).
TEST(AddressAxis, SmallGapsBetweenAPoolsSegmentsStayToScale) {
  std::vector<std::pair<uint64_t, uint64_t>> segments;
  uint64_t at = 0x7f0000000000;
  for (int i = 0; i < 400; ++i) {
    segments.push_back({at, 100ull << 20});
    at += (100ull << 20) + (i % 3 == 0 ? 2ull << 20 : 0);
    if (i == 199) at += 3ull << 30;
  }
  const AddressAxis axis = compress_addresses(segments);
  ASSERT_EQ(axis.spans.size(), 2u);
  EXPECT_EQ(axis.spans[0].lo, 0x7f0000000000u);
  EXPECT_EQ(axis.spans[1].hi, segments.back().first + (100ull << 20));
  // Within a span the axis is linear: the middle segment of the lower half halfway up it.
  const double mid = axis.y_of(segments[100].first);
  EXPECT_NEAR((mid - axis.spans[0].y0) / (axis.spans[0].y1 - axis.spans[0].y0), 0.5, 0.01);
}

// The top of a span of nearly 2^64 bytes: y's share of the span rounds to 1, and the share
// of the bytes to 2^64, which no uint64 holds (converting it was undefined; x86 gave 0).
// The answer is the span's last byte.
TEST(AddressAxis, TheTopOfASpanOfTheWholeAddressSpaceIsItsLastByte) {
  AddressAxis axis;
  axis.spans.push_back({0, std::numeric_limits<uint64_t>::max(), 0.00272, 1.0});
  EXPECT_EQ(axis.addr_at(std::nextafter(1.0, 0.0)), std::numeric_limits<uint64_t>::max() - 1);
}

TEST(BlockDetail, SaysSizeOwnerTimesAndBothStacks) {
  viewdata::BlockRow row;
  row.id = 7;
  row.layer = Layer::kPta;
  row.device = 0;
  row.addr = 0x12c000200000;
  row.size_bytes = 64 << 20;
  row.alloc_ns = 1'500'000'000;
  row.free_ns = 4'000'000'000;
  row.tid = 42;
  row.allocation_id = 99;
  row.owner = "model@encoder";
  row.name = "aten::matmul";
  row.stack_python = "train.py(10): step";
  row.stack_c = "libtorch.so(f+0x1)";
  const viewdata::BlockDetail d = viewdata::block_detail(row, 1'000'000'000, 5'000'000'000);
  EXPECT_EQ(d.title, "Block 7: 64.0 MiB PTA on device 0");
  auto field = [&](const std::string& label) {
    for (const auto& [l, v] : d.fields)
      if (l == label) return v;
    return std::string("missing");
  };
  EXPECT_EQ(field("owner"), "model@encoder");
  EXPECT_EQ(field("Name"), "aten::matmul");
  EXPECT_EQ(field("Allocated"), "+0.500 s");
  EXPECT_EQ(field("Freed"), "+3.000 s");
  EXPECT_EQ(field("Lifetime"), "2.500 s");
  EXPECT_EQ(field("Thread Id"), "42");
  EXPECT_EQ(field("allocation_id"), "99");
  EXPECT_EQ(field("Address"), "0x12c000200000");
  EXPECT_EQ(d.stack_python, "train.py(10): step");
  EXPECT_EQ(d.stack_c, "libtorch.so(f+0x1)");
  row.free_ns = viewdata::kStillLive;
  const viewdata::BlockDetail live = viewdata::block_detail(row, 1'000'000'000, 5'000'000'000);
  EXPECT_EQ(live.fields[6].second, "still live");
  EXPECT_EQ(live.fields[7].second, "3.500 s so far");
}

}  // namespace
}  // namespace memtap
