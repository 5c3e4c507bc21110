// A compressed address axis for drawing blocks by address: real address spaces are sparse
// (the heap near 0x55..., mappings near 0x7f..., a device's pool at 0x12c0...), so a linear
// axis would show a few lines and empty space. The occupied address ranges keep their order
// and are each drawn linearly; the gaps between them are collapsed to a fixed small height
// where the view draws a gap marker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memtap::viewdata {

// Addresses [lo, hi) drawn over [y0, y1) of the axis (0: the axis' low end, 1: its high end).
struct AddressSpan {
  uint64_t lo = 0;
  uint64_t hi = 0;
  double y0 = 0;
  double y1 = 0;
};

struct AddressAxis {
  std::vector<AddressSpan> spans;  // ascending addresses and ascending y, gaps between them

  // Where `addr` lies on the axis (0..1); an address in a gap: the gap's middle; outside
  // every span: 0 or 1. An empty axis: 0.
  double y_of(uint64_t addr) const;
  // The address drawn at y (the nearest span's, for a gap).
  uint64_t addr_at(double y) const;
};

struct AddressAxisOptions {
  // Gaps up to this many bytes stay on the axis (drawn to scale), and so do gaps up to
  // gap_share of the bytes the intervals cover: such a gap drawn to scale takes no more
  // height than a collapsed one would. Larger ones collapse.
  uint64_t keep_gap_bytes = 1 << 20;
  // The height of each collapsed gap, as a part of the axis (all gaps together: at most
  // max_gaps_share).
  double gap_share = 0.008;
  double max_gaps_share = 0.12;
};

// The axis for these [addr, addr + size) intervals (any order, may overlap). A span's height
// grows with the square root of the bytes it spans, so a 4 KiB range beside a 1 GiB one is
// still a few pixels high; every span gets at least a quarter of an even share.
AddressAxis compress_addresses(std::vector<std::pair<uint64_t, uint64_t>> intervals,
                               const AddressAxisOptions& options = {});

}  // namespace memtap::viewdata
