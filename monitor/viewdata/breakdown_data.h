// The memory breakdown at an instant: the blocks live at t, by layer, then owner, then stack
// (BlockQueries::live_groups), as a tree with each node's bytes, blocks and share of the
// whole. Small children are folded into one "other (N smaller)" node per parent, so the
// number of boxes the treemap draws stays bounded whatever the session.
//
// The whole is what the curves call Allocated, the blocks the report's peak breaks down
// (monitor/engine/blocks/basis.h): on the host the heap and pinned buffers, on a device with
// a framework pool its blocks (PTA). The other layers live then are told beside it: a pool's
// segments (HAL) hold its blocks, so adding the two counted every tensor twice (108 GiB at
// the peak of a snapshot whose pool held 51 GiB in 57 GiB of segments), and every share
// came out halved against the report's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "monitor/viewdata/block_index.h"
#include "monitor/viewdata/data_source.h"

namespace memtap::viewdata {

struct BreakdownLimits {
  size_t max_children = 8;   // per parent, "other" included
  double min_share = 0.005;  // children below this share of the whole are folded
};

struct BreakdownNode {
  enum class Level : uint8_t { kLayer, kOwner, kStack };
  Level level = Level::kLayer;
  std::string label;  // "HOST", the owner ("(no owner)"), a stack's first line ("(no stack)")
  std::string full;   // the whole owner or stack, for a tooltip
  Layer layer = Layer::kHost;
  bool is_mmap = false;
  // What the block table filters by to show this node's blocks (the owner, the stack's first
  // line); "" for a layer, a node without owner or stack, and "other".
  std::string filter;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  double share = 0;                     // of all live bytes
  size_t folded = 0;                    // "other": how many nodes it stands for (0: a real node)
  std::vector<BreakdownNode> children;  // most bytes first, "other" last
};

struct BreakdownData {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  int64_t t_ns = 0;
  uint64_t bytes = 0;  // Allocated at t: what `layers` hold
  uint64_t blocks = 0;
  std::vector<BreakdownNode> layers;  // most bytes first
  // The other layers live at t (a pool's HAL segments, the host's mappings), most bytes
  // first, their shares of `bytes`; not part of the whole.
  std::vector<BreakdownNode> beside;
  // BlockQueries::covered_until_ns() when asked: past it, behind a flood, the blocks allocated
  // since are not in the tree yet.
  int64_t covered_until_ns = std::numeric_limits<int64_t>::max();
};

// The tree of `groups` (live_groups' answer) of a scope on `device`: every byte of them is
// in it exactly once, in `layers` or `beside`. `pool_seen`: the device's framework pool has
// had blocks at some time, if none is live now (then Allocated is its blocks, as the curve
// counts it: nothing, with the driver's blocks beside, not the driver's blocks as the whole).
BreakdownData breakdown_tree(const std::vector<BlockGroup>& groups, int32_t device,
                             const BreakdownLimits& limits = {}, bool pool_seen = false);

// The breakdown of (pid, device) at t_ns, on the block index's thread.
BreakdownData compute_breakdown(BlockQueries& blocks, uint32_t pid, int32_t device, int64_t t_ns,
                                const BreakdownLimits& limits = {});

// When Allocated of (pid, device) first reached its peak (the engine's curve, as the report's
// "Allocated peak"), on the engine's thread; 0 while it has no event of that scope. The
// breakdown's "At peak" and memtap-gui --at peak both go there.
int64_t allocated_peak_ns(const EngineView& engine, uint32_t pid, int32_t device);

// The view's heading: "Allocated at +1.250 s: 51.0 GiB in 2,100 blocks; beside it: HAL
// 56.9 GiB", `when` being the instant as the views write it.
std::string breakdown_heading(const BreakdownData& data, const std::string& when);

// Boxes drawn (nodes at every level, "other" included): what the limits bound.
size_t breakdown_boxes(const BreakdownData& data);

}  // namespace memtap::viewdata
