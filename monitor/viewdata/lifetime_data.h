// The block lifetime graph's data: the blocks of one process on one device that were live
// at some moment of a time range, as rectangles over time (allocation to free) and address
// (on a compressed axis, address_axis.h). A range can hold millions of blocks; the graph
// draws the largest `max_blocks` and says how many there were.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "monitor/viewdata/address_axis.h"
#include "monitor/viewdata/block_index.h"

namespace memtap::viewdata {

struct LifetimeRequest {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  int64_t t0_ns = 0;
  int64_t t1_ns = 0;
  size_t max_blocks = 20000;
  // The selected block (-1: none): drawn even when it is not among the largest, if it was
  // live in the range; found wherever it is, so the view can bring it into the range.
  int64_t selected = -1;
  size_t max_owners = 10;  // owners coloured apart; the others share one colour
};

struct OwnerShare {
  std::string owner;  // "" for blocks without one
  uint64_t bytes = 0;
};

struct LifetimeData {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  int64_t t0_ns = 0;
  int64_t t1_ns = 0;
  // The blocks drawn, in the order they are drawn: the driver's (HAL) first, then the
  // others, so that the framework's blocks lie on top of the segments around them; each
  // largest first, so that small blocks lie on top of large ones (the selected one last if
  // it was added). Without their stacks: the detail panel asks for the one clicked
  // (BlockQueries::find).
  std::vector<BlockRow> blocks;
  uint64_t matching_blocks = 0;  // blocks live in the range, all of them
  uint64_t matching_bytes = 0;
  AddressAxis axis;                  // over the blocks drawn
  std::vector<OwnerShare> owners;    // of the blocks drawn, most bytes first, at most max_owners
  std::optional<BlockRow> selected;  // the selected block, wherever it is (without stacks)
};

LifetimeData compute_lifetime(BlockQueries& q, const LifetimeRequest& r);

// Whether `b` was live at some moment of [t0, t1] (BlockFilter's rule).
bool live_in(const BlockRow& b, int64_t t0_ns, int64_t t1_ns);

}  // namespace memtap::viewdata
