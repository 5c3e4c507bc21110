// The breakdown at an instant: the live blocks by layer, owner and stack sum to what is live
// at t, "other" folding bounds the boxes, and the treemap layout tiles its area.
#include "monitor/viewdata/breakdown_data.h"

#include <gtest/gtest.h>

#include "monitor/viewdata/treemap_layout.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/device_rows.h"
#include "tests/unit/viewdata/leak_recording.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

using viewdata::BreakdownData;
using viewdata::BreakdownNode;

uint64_t sum(const std::vector<BreakdownNode>& nodes) {
  uint64_t s = 0;
  for (const BreakdownNode& n : nodes) s += n.bytes;
  return s;
}

// Every parent's bytes are its children's sum, at every level.
void expect_sums(const std::vector<BreakdownNode>& nodes) {
  for (const BreakdownNode& n : nodes) {
    if (n.children.empty()) continue;
    EXPECT_EQ(sum(n.children), n.bytes) << n.label;
    expect_sums(n.children);
  }
}

TEST(BreakdownData, GroupsSumToTheBytesLiveAtTheInstant) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::build_leak_recording(b);
  const std::string path = dir.file("leak.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const int64_t t = b.at(53);
  const BreakdownData d = test::block_query(*source, [&](viewdata::BlockQueries& q) {
    return viewdata::compute_breakdown(q, b.pid(), kHostDevice, t);
  });
  viewdata::BlockFilter live;
  live.pid = b.pid();
  live.t0_ns = live.t1_ns = t;
  const viewdata::BlockSet all =
      test::block_query(*source, [&](viewdata::BlockQueries& q) { return q.largest(live, 1); });
  EXPECT_EQ(d.bytes, (1u << 20) + 50000 + 5000);
  EXPECT_EQ(d.bytes, all.matching_bytes);
  EXPECT_EQ(d.blocks, all.matching_blocks);
  EXPECT_EQ(d.t_ns, t);
  EXPECT_EQ(sum(d.layers), d.bytes);
  expect_sums(d.layers);

  ASSERT_EQ(d.layers.size(), 1u);
  EXPECT_EQ(d.layers[0].label, "HOST");
  const std::vector<BreakdownNode>& owners = d.layers[0].children;
  ASSERT_EQ(owners.size(), 3u);
  EXPECT_EQ(owners[0].label, "activations");  // most bytes first
  EXPECT_EQ(owners[0].filter, "activations");
  EXPECT_NEAR(owners[0].share, double(1 << 20) / double(d.bytes), 1e-9);
  EXPECT_EQ(owners[2].label, "cache");
  ASSERT_EQ(owners[2].children.size(), 1u);
  EXPECT_EQ(owners[2].children[0].label, test::kLeakFrame);
  EXPECT_EQ(owners[2].children[0].filter, test::kLeakFrame);
  EXPECT_EQ(owners[2].children[0].full, test::kLeakStack);
  EXPECT_EQ(owners[2].children[0].blocks, 5u);
}

TEST(BreakdownData, NothingLiveBeforeTheFirstBlock) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::build_leak_recording(b);
  const std::string path = dir.file("leak.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const BreakdownData d = test::block_query(*source, [&](viewdata::BlockQueries& q) {
    return viewdata::compute_breakdown(q, b.pid(), kHostDevice, b.at(5));
  });
  EXPECT_EQ(d.bytes, 0u);
  EXPECT_TRUE(d.layers.empty());
}

TEST(BreakdownData, SmallAndManyChildrenFoldIntoOther) {
  std::vector<viewdata::BlockGroup> groups;
  for (int o = 0; o < 100; ++o) {
    for (int s = 0; s < 30; ++s) {
      groups.push_back({Layer::kHost, false, "owner" + std::to_string(o),
                        "frame" + std::to_string(s), uint64_t(1000 + o * 100 + s), 1});
    }
  }
  groups.push_back({Layer::kHostPinned, false, "", "", 50'000'000, 2});  // one big group
  viewdata::BreakdownLimits limits;
  limits.max_children = 6;
  limits.min_share = 0;  // only the count folds here
  const BreakdownData d = viewdata::breakdown_tree(groups, kHostDevice, limits);
  uint64_t total = 0;
  for (const auto& g : groups) total += g.bytes;
  EXPECT_EQ(d.bytes, total);
  EXPECT_EQ(sum(d.layers), total);
  expect_sums(d.layers);
  ASSERT_EQ(d.layers.size(), 2u);
  EXPECT_EQ(d.layers[0].label, "HOST_PINNED");
  EXPECT_EQ(d.layers[0].children[0].label, "(no owner)");
  EXPECT_EQ(d.layers[0].children[0].children[0].label, "(no stack)");
  const BreakdownNode& host = d.layers[1];
  ASSERT_EQ(host.children.size(), 6u);
  EXPECT_EQ(host.children.back().folded, 95u);
  EXPECT_EQ(host.children.back().label, "other (95 smaller)");
  EXPECT_EQ(host.children.back().filter, "");
  EXPECT_EQ(host.children[0].label, "owner99");
  // Bounded: layers x (owners x (stacks + 1)), whatever the groups.
  EXPECT_LE(viewdata::breakdown_boxes(d), 2u * (1 + 6 * (1 + 6)));
}

TEST(BreakdownData, OneLeftOverIsShownAsItself) {
  std::vector<viewdata::BlockGroup> groups;
  for (int o = 0; o < 4; ++o)
    groups.push_back({Layer::kHost, false, "o" + std::to_string(o), "", 1000, 1});
  viewdata::BreakdownLimits limits;
  limits.max_children = 4;
  const BreakdownData d = viewdata::breakdown_tree(groups, kHostDevice, limits);
  ASSERT_EQ(d.layers.size(), 1u);
  EXPECT_EQ(d.layers[0].children.size(), 4u);
  for (const BreakdownNode& n : d.layers[0].children) EXPECT_EQ(n.folded, 0u);
}

// The whole is Allocated, as the curves and the report's peak count it: a pool's blocks
// (PTA) on a device, not the segments (HAL) that hold them, which are told beside it; the
// host's heap and pinned buffers, its mappings beside.
TEST(BreakdownData, TheWholeIsAllocatedAndTheOtherLayersAreBesideIt) {
  constexpr uint64_t kMiB = 1 << 20;
  const std::vector<viewdata::BlockGroup> device_groups = {
      {Layer::kHal, false, "", "", 64 * kMiB, 2},  // two segments
      {Layer::kPta, false, "model", "", 40 * kMiB, 10},
      {Layer::kPta, false, "", "", 8 * kMiB, 4},
  };
  const BreakdownData d = viewdata::breakdown_tree(device_groups, 0);
  EXPECT_EQ(d.bytes, 48 * kMiB) << "not 112 MiB: the segments hold the blocks";
  EXPECT_EQ(d.blocks, 14u);
  ASSERT_EQ(d.layers.size(), 1u);
  EXPECT_EQ(d.layers[0].label, "PTA");
  EXPECT_NEAR(d.layers[0].children[0].share, 40.0 / 48.0, 1e-9);  // "model", as the report says
  ASSERT_EQ(d.beside.size(), 1u);
  EXPECT_EQ(d.beside[0].label, "HAL");
  EXPECT_EQ(d.beside[0].bytes, 64 * kMiB);
  EXPECT_EQ(viewdata::breakdown_heading(d, "+1.250 s"),
            "Allocated at +1.250 s: 48.0 MiB in 14 blocks; beside it: HAL 64.0 MiB");

  // A device without a pool: its driver's blocks are what it holds.
  const BreakdownData driver = viewdata::breakdown_tree({device_groups[0]}, 0);
  EXPECT_EQ(driver.bytes, 64 * kMiB);
  EXPECT_TRUE(driver.beside.empty());

  const std::vector<viewdata::BlockGroup> host_groups = {
      {Layer::kHost, false, "", "", 3 * kMiB, 1234},
      {Layer::kHost, true, "", "", 35 * kMiB, 3},  // mappings: Reserved, not Allocated
  };
  const BreakdownData host = viewdata::breakdown_tree(host_groups, kHostDevice);
  EXPECT_EQ(host.bytes, 3 * kMiB);
  EXPECT_EQ(viewdata::breakdown_heading(host, "+2.000 s"),
            "Allocated at +2.000 s: 3.0 MiB in 1,234 blocks; beside it: HOST mmap 35.0 MiB");
  EXPECT_EQ(viewdata::breakdown_heading(viewdata::breakdown_tree({host_groups[1]}, kHostDevice),
                                        "+0.000 s"),
            "Allocated at +0.000 s: nothing; beside it: HOST mmap 35.0 MiB");
}

// On a device whose pool has had blocks, Allocated is the pool's blocks at every instant, as
// the curve counts it: before its first block and after its last, nothing, with the driver's
// segments beside it, not the segments as the whole.
TEST(BreakdownData, ADeviceWhosePoolIsEmptyNowHasNothingAllocated) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(0, 0x1000, 4096);
  const std::string path = dir.file("pool.db");
  b.write(path);
  test::DeviceRows d(b, 0);
  d.malloc(1, "HAL", 0x7f0000000000, 2 << 20);
  d.malloc(2, "PTA", 0x7f0000000000, 512 << 10, "model");
  d.free(3, "PTA", 0x7f0000000000);
  d.malloc(5, "HAL", 0x7f1000000000, 1 << 20);
  d.append_to(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const auto at = [&](double ms) {
    return test::block_query(*source, [&](viewdata::BlockQueries& q) {
      return viewdata::compute_breakdown(q, b.pid(), 0, b.at(ms));
    });
  };
  const BreakdownData during = at(2.5);
  EXPECT_EQ(during.bytes, 512u << 10);
  EXPECT_EQ(viewdata::breakdown_heading(during, "+2.500 s"),
            "Allocated at +2.500 s: 512.0 KiB in 1 block; beside it: HAL 2.0 MiB");
  for (const double ms : {1.5, 4.0}) {
    SCOPED_TRACE(ms);
    const BreakdownData empty = at(ms);
    EXPECT_EQ(empty.bytes, 0u);
    EXPECT_TRUE(empty.layers.empty());
    ASSERT_EQ(empty.beside.size(), 1u);
    EXPECT_EQ(empty.beside[0].label, "HAL");
    EXPECT_EQ(empty.beside[0].bytes, 2u << 20);
    EXPECT_EQ(viewdata::breakdown_heading(empty, "+1.000 s"),
              "Allocated at +1.000 s: nothing; beside it: HAL 2.0 MiB");
  }
}

TEST(TreemapLayout, RectanglesTileTheAreaInProportion) {
  const std::vector<double> values = {50, 20, 10, 10, 5, 5, 0};
  const viewdata::TreemapRect area{10, 20, 400, 200};
  const auto r = viewdata::squarify(values, area);
  ASSERT_EQ(r.size(), values.size());
  double covered = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(r[i].w * r[i].h, values[i] / 100 * 400 * 200, 1e-6) << i;
    EXPECT_GE(r[i].x, area.x - 1e-9);
    EXPECT_GE(r[i].y, area.y - 1e-9);
    EXPECT_LE(r[i].x + r[i].w, area.x + area.w + 1e-6);
    EXPECT_LE(r[i].y + r[i].h, area.y + area.h + 1e-6);
    covered += r[i].w * r[i].h;
  }
  EXPECT_NEAR(covered, 400 * 200, 1e-6);
  // Squarified: the largest box is not a sliver.
  EXPECT_LT(std::max(r[0].w / r[0].h, r[0].h / r[0].w), 3.0);
}

}  // namespace
}  // namespace memtap
